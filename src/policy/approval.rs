//! Approvals: a tool call whose consequence needs the application's say waits for it. The
//! request names the exact object — the tool, its arguments and their digest, what it would
//! touch — and expires; a decision is logged and a grant is consumed once. Nothing a model, a
//! tool or a document says grants one: only the application's decision does.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::gate::{Consequence, Effect};

/// A tool call waiting for the application's approval: the exact object, why it waits, and
/// until when.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// // A tool asking for approval of every call; the request is what the handle lists.
/// # struct Ticket;
/// # #[baton::async_trait]
/// # impl baton::Tool for Ticket {
/// #     fn spec(&self) -> baton::ToolSpec { baton::ToolSpec { name: "file_ticket".into(), description: "File.".into(), parameters: baton::json!({"type": "object"}) } }
/// #     fn consequences(&self, _: &baton::Value) -> Vec<baton::Consequence> { vec![] }
/// #     fn needs_approval(&self, _: &baton::Value) -> bool { true }
/// #     async fn call(&self, _: &baton::Value, _: &baton::ToolContext) -> Result<baton::ToolOutput, baton::ToolError> { Ok(baton::ToolOutput::new("filed")) }
/// # }
/// use baton::testing::{ScriptedModel, ScriptedTurn};
/// let model = ScriptedModel::new([
///     ScriptedTurn::tool("file_ticket", baton::json!({"title": "a"})),
///     ScriptedTurn::text("## Settled conclusions\n## Open items\n## Hard constraints\n- none\n"),
/// ]);
/// let handle = baton::Coordinator::builder()
///     .model(std::sync::Arc::new(model))
///     .tools(baton::ToolRegistry::empty().with(std::sync::Arc::new(Ticket)))
///     .role(baton::Role::new("filer").tools(["file_ticket"]))
///     .build()
///     .start(baton::Task::job("File it.").subtask("filer", "File a ticket."))
///     .await
///     .unwrap();
/// let mut events = handle.events();
/// while let Some(event) = events.next().await {
///     if let baton::RunEvent::ApprovalRequested { request } = event.unwrap().event {
///         assert_eq!((request.tool.as_str(), request.call_id.as_str()), ("file_ticket", "sa1.1"));
///         assert!(request.expires_ms > request.requested_ms);
///         handle.deny(&request.id, "not today").await.unwrap();
///     }
/// }
/// assert!(handle.report().await.is_ok());
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ApprovalRequest {
    /// Its id in the run (`ap1`, `ap2`, …): what [`Approval`]s are given for.
    pub id: String,
    /// The subagent whose call waits.
    pub subagent: String,
    /// The call that asked (`sa1.3`).
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The call's arguments, as the model wrote them (scrubbed of secrets where logged).
    pub arguments: Value,
    /// SHA-256 of the tool's name, a newline and the arguments' JSON (keys sorted): the
    /// intent a decision is for — the same tool with the same arguments.
    pub arguments_digest: String,
    /// What the call would touch, as the tool declares it.
    pub consequences: Vec<Consequence>,
    /// Why it needs approval (the tool says so; the role's rule for an effect; a call like it
    /// had an unknown outcome).
    pub reason: String,
    /// When it was asked (ms since the Unix epoch).
    pub requested_ms: u64,
    /// When it expires unanswered (ms since the Unix epoch): after that it is history, not
    /// permission.
    pub expires_ms: u64,
    /// The call repeats an intent whose outcome is unknown (the reason says which call): only
    /// a grant of such a request lets it run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeats_unknown: bool,
}

/// What the application says of a request.
/// ```
/// struct WritesUnderOut;
/// #[baton::async_trait]
/// impl baton::Approver for WritesUnderOut {
///     async fn decide(&self, request: &baton::ApprovalRequest) -> baton::Approval {
///         if request.consequences.iter().all(|c| c.resource.starts_with("out/")) {
///             baton::Approval::Grant
///         } else {
///             baton::Approval::Deny("only out/ may be written".into())
///         }
///     }
/// }
/// let _coordinator = baton::Coordinator::builder().approver(std::sync::Arc::new(WritesUnderOut)).build();
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Approval {
    /// The call may run, once.
    Grant,
    /// The call does not run; the model is told why.
    Deny(String),
}

/// How a request ended, as the log records it.
/// ```
/// let denied: baton::ApprovalDecision =
///     baton::serde_json::from_str(r#"{"decision": "denied", "reason": "not today"}"#).unwrap();
/// assert_eq!(denied, baton::ApprovalDecision::Denied { reason: "not today".into() });
/// assert_eq!(denied.word(), "denied");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Granted: the call may run once.
    Granted,
    /// Denied: the call does not run.
    Denied {
        /// Why, as the application said.
        reason: String,
    },
    /// Not decided before it expired: the call does not run.
    Expired,
    /// The run ended (or its subagent did) with the request undecided.
    Withdrawn {
        /// Why.
        reason: String,
    },
}

impl ApprovalDecision {
    /// One word for it: granted, denied, expired, withdrawn.
    /// ```
    /// use baton::ApprovalDecision;
    /// assert_eq!(ApprovalDecision::Granted.word(), "granted");
    /// assert_eq!(ApprovalDecision::Denied { reason: "no".into() }.word(), "denied");
    /// ```
    pub fn word(&self) -> &'static str {
        match self {
            ApprovalDecision::Granted => "granted",
            ApprovalDecision::Denied { .. } => "denied",
            ApprovalDecision::Expired => "expired",
            ApprovalDecision::Withdrawn { .. } => "withdrawn",
        }
    }
}

/// Why a decision was not taken.
/// ```
/// # baton::tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = baton::testing::fixture_tree();
/// let handle = baton::Coordinator::builder().build()
///     .start(baton::Task::explore("where is next_delay?", dir.path())).await.unwrap();
/// assert_eq!(handle.approve("ap9").await, Err(baton::ApprovalError::Unknown("ap9".into())));
/// handle.report().await.unwrap();
/// # });
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ApprovalError {
    /// No request with that id in the run.
    #[error("no approval request `{0}` in this run")]
    Unknown(String),
    /// The request was decided already.
    #[error("approval request `{id}` was {word} already")]
    Decided {
        /// The request.
        id: String,
        /// How it was decided.
        word: &'static str,
    },
    /// The request expired before the decision came: it is history, not permission.
    #[error("approval request `{0}` expired before it was decided")]
    Expired(String),
    /// The run is over.
    #[error("the run has ended")]
    RunEnded,
}

/// Decides requests as they come, in the application's place (set on the coordinator's
/// builder); without one, requests wait for `RunHandle::approve` or `RunHandle::deny`.
///
/// ```
/// use baton::{async_trait, Approval, ApprovalRequest, Approver};
/// /// Denies everything that reaches the network, grants the rest.
/// struct NoNetwork;
/// #[async_trait]
/// impl Approver for NoNetwork {
///     async fn decide(&self, request: &ApprovalRequest) -> Approval {
///         if request.consequences.iter().any(|c| c.effect == baton::Effect::Network) {
///             Approval::Deny("no network".into())
///         } else {
///             Approval::Grant
///         }
///     }
/// }
/// let coordinator = baton::Coordinator::builder()
///     .approver(std::sync::Arc::new(NoNetwork))
///     .build();
/// # let _ = coordinator;
/// ```
#[async_trait::async_trait]
pub trait Approver: Send + Sync {
    /// The decision on one request.
    async fn decide(&self, request: &ApprovalRequest) -> Approval;
}

/// The intents (SHA-256 of a tool's name and arguments) of calls with effects whose outcome is
/// unknown, each with the call's id: shared by a run's subagents, so no such call is made again
/// without the application's approval.
pub(crate) type UnknownOutcomes = std::sync::Arc<dashmap::DashMap<String, String>>;

/// The intent a call stands for: SHA-256 of the tool's name, a newline and its arguments'
/// JSON (object keys sorted).
pub(crate) fn intent_digest(tool: &str, arguments: &Value) -> String {
    let mut text = String::with_capacity(tool.len() + 64);
    text.push_str(tool);
    text.push('\n');
    canonical(arguments, &mut text);
    crate::digest::sha256_hex(text.as_bytes())
}

/// A value's JSON with every object's keys sorted, whatever order the map keeps them in.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Why a call needs the application's approval before it runs, if it does (pure): the tool
/// says so; or one of its consequences has an effect its role reserves for approval (a tool
/// that does not declare what it touches is taken to touch anything — writing too, unless it
/// is read-only); or it has effects and an earlier call of the same intent has an unknown
/// outcome (`earlier`: that call's id) — repeating it could do twice what may have been done
/// once.
pub(crate) fn approval_reason(
    tool: &str,
    tool_says: bool,
    role: &str,
    reserved: &[Effect],
    (consequences, read_only): (&[Consequence], bool),
    earlier: Option<&str>,
) -> Option<String> {
    if let Some(call) = earlier {
        return Some(format!(
            "the outcome of an earlier call of `{tool}` with the same arguments ({call}) is unknown: repeating it could do it twice"
        ));
    }
    if tool_says {
        return Some(format!("the tool `{tool}` asks for approval of this call"));
    }
    let reserves = |c: &Consequence| match c.effect {
        Effect::Undeclared => reserved.iter().any(|&r| r != Effect::Write || !read_only),
        effect => reserved.contains(&effect),
    };
    consequences
        .iter()
        .find(|c| reserves(c))
        .map(|c| format!("the role `{role}` needs approval for {}", c.describe()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_needs_approval_for_each_reason_and_not_otherwise() {
        let write = Consequence::on_path(Effect::Write, "out/x");
        let read = Consequence::on_path(Effect::Read, "src/a.rs");
        let reason = |says, reserved: &[Effect], earlier| {
            approval_reason(
                "t",
                says,
                "r",
                reserved,
                (&[read.clone(), write.clone()][..], false),
                earlier,
            )
        };
        assert_eq!(reason(false, &[], None), None);
        assert_eq!(reason(false, &[Effect::Network], None), None);
        assert!(reason(true, &[], None)
            .unwrap()
            .contains("asks for approval"));
        assert!(reason(false, &[Effect::Write], None)
            .unwrap()
            .contains("writing `out/x`"));
        assert!(reason(false, &[], Some("sa1.2"))
            .unwrap()
            .contains("(sa1.2) is unknown"));
        // A tool that declares nothing is taken to touch anything: writing too, unless it is
        // read-only.
        let undeclared = [Consequence {
            effect: Effect::Undeclared,
            resource: "t".into(),
        }];
        let of = |reserved: &[Effect], read_only| {
            approval_reason(
                "t",
                false,
                "r",
                reserved,
                (&undeclared[..], read_only),
                None,
            )
        };
        assert!(of(&[Effect::Write], false).is_some());
        assert!(of(&[Effect::Network], true).is_some());
        assert!(of(&[Effect::Write], true).is_none());
        assert!(of(&[], false).is_none());
    }

    #[test]
    fn an_intent_is_the_tool_and_its_arguments_whatever_their_key_order() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": [1, 2]}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": [1, 2], "b": 1}"#).unwrap();
        assert_eq!(intent_digest("t", &a), intent_digest("t", &b));
        assert_ne!(intent_digest("t", &a), intent_digest("u", &a));
        let c: Value = serde_json::from_str(r#"{"a": [2, 1], "b": 1}"#).unwrap();
        assert_ne!(intent_digest("t", &a), intent_digest("t", &c));
    }

    /// The digest is the documented formula, computed elsewhere: SHA-256 of the tool's name,
    /// a newline and the arguments' compact JSON with every object's keys sorted (Python's
    /// `hashlib.sha256(("charge\n" + json.dumps(a, sort_keys=True, separators=(",", ":"),
    /// ensure_ascii=False)).encode())`).
    #[test]
    fn an_intent_digest_is_the_documented_formula() {
        let a: Value = serde_json::from_str(
            r#"{"z": {"b": 1, "a": [2, {"y": 1, "x": "é"}]}, "order": "A-1", "amount": 5}"#,
        )
        .unwrap();
        assert_eq!(
            intent_digest("charge", &a),
            "bc7b6abbd5018861e2a1fbfee9c08bf367c5fef42c8abecc43493f3d8edafc4c"
        );
    }
}
