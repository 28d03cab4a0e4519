//! The agent loop's unit tests: scripted models, budgets, compaction and handoff turns.

use super::*;
use crate::handoff::ViolationCode;
use crate::model::Usage;
use serde_json::json;

fn answer(text: &str, calls: Vec<ToolCall>) -> Result<ModelResponse, ModelError> {
    Ok(ModelResponse::new(
        text.into(),
        calls,
        Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
    ))
}

fn grep_result(call_id: &str) -> ToolResult {
    ToolResult {
        call_id: call_id.into(),
        name: "grep".into(),
        content: "x".into(),
        is_error: false,
        observations: vec![],
        denial: None,
    }
}

fn grep_call() -> ToolCall {
    ToolCall {
        id: "x".into(),
        name: "grep".into(),
        arguments: json!({"pattern": "a"}),
    }
}

/// A window with no tools and the default budget (`sa1`, system `s`, brief `b`).
fn fresh() -> AgentLoop {
    AgentLoop::new(
        "sa1",
        "s".into(),
        "b".into(),
        Vec::new().into(),
        Budget::default(),
    )
}

#[test]
fn a_text_answer_is_handed_off_and_a_repair_quotes_the_violations() {
    let mut l = fresh();
    assert!(matches!(l.start(), Step::CallModel(_)));
    let Step::HandOff(text) = l.on_model(answer("just prose", vec![])) else {
        panic!("a text answer is a handoff")
    };
    assert_eq!(text, "just prose");
    let violation = Violation {
        code: ViolationCode::SectionMissing,
        line: 0,
        message: "the `## Settled conclusions` section is missing".into(),
        conclusion: None,
    };
    let Step::CallModel(request) = l.on_repair(&[violation]) else {
        panic!("a repair turn")
    };
    let n = request.messages.len();
    assert!(
        matches!(&request.messages[n - 2], Message::Assistant { text, .. } if text == "just prose")
    );
    let Message::User { text } = &request.messages[n - 1] else {
        panic!()
    };
    assert!(text.contains("[section_missing]"));
}

#[test]
fn over_budget_is_asked_once_to_hand_off_then_stopped() {
    let budget = Budget {
        model_turns: 2,
        tool_calls: 10,
        tokens: 1_000_000,
    };
    let mut l = AgentLoop::new("sa1", "s".into(), "b".into(), Vec::new().into(), budget);
    l.start();
    let Step::CallTools(calls) = l.on_model(answer("", vec![grep_call()])) else {
        panic!()
    };
    assert_eq!(calls[0].id, "sa1.1");
    // The second turn is the last the budget allows: it carries the demand and no tools.
    let Step::CallModel(request) = l.on_tools(vec![grep_result("sa1.1")]) else {
        panic!()
    };
    assert!(request.tools.is_empty());
    assert!(
        matches!(request.messages.last(), Some(Message::User { text }) if text.contains("last model turn of 2"))
    );
    // Calling tools anyway ends it.
    assert!(matches!(
        l.on_model(answer("", vec![grep_call()])),
        Step::Failed(_)
    ));
    assert_eq!(l.spent().model_turns, 2, "no turn past the budget");
}

/// Issue 20, item 3: a call whose reservation — its input estimate and every answer token
/// — would pass the token budget is not sent: the subagent is asked for its handoff with
/// the answer's limit lowered to what is left, and stopped when a handoff cannot fit.
#[test]
fn the_token_budget_is_reserved_before_the_call_not_checked_after() {
    let brief = "b".repeat(4000);
    let budget = |tokens| Budget {
        model_turns: 12,
        tool_calls: 60,
        tokens,
    };
    // Room for the first call (about 1,250 in, 4,096 out) and a short handoff, not more.
    let mut l = AgentLoop::new(
        "sa1",
        "s".into(),
        brief.clone(),
        Vec::new().into(),
        budget(6_000),
    );
    let Step::CallModel(first) = l.start() else {
        panic!()
    };
    assert_eq!(first.max_tokens, ANSWER_TOKENS);
    let spent_reply = Ok(ModelResponse::new(
        String::new(),
        vec![grep_call()],
        Usage {
            input_tokens: first.reserved_input_tokens(),
            output_tokens: 100,
            ..Usage::default()
        },
    ));
    let Step::CallTools(_) = l.on_model(spent_reply) else {
        panic!()
    };
    let Step::CallModel(second) = l.on_tools(vec![grep_result("sa1.1")]) else {
        panic!()
    };
    assert!(second.tools.is_empty(), "asked for its handoff");
    let reserved = u64::from(second.max_tokens) + second.reserved_input_tokens();
    assert!(
        l.spent().tokens() + reserved <= 6_000,
        "{} spent + {reserved} reserved",
        l.spent().tokens()
    );
    assert!(second.max_tokens < ANSWER_TOKENS && second.max_tokens >= MIN_HANDOFF_TOKENS);
    // A budget the first call's input alone passes: nothing is sent.
    let mut tight = AgentLoop::new("sa1", "s".into(), brief, Vec::new().into(), budget(1));
    assert!(
        matches!(tight.start(), Step::Failed(why) if why.contains("token budget (1) would be passed")),
    );
    assert_eq!(tight.spent().model_turns, 0);
}

#[test]
fn no_repair_turn_past_the_budget() {
    let budget = Budget {
        model_turns: 1,
        tool_calls: 10,
        tokens: 1_000_000,
    };
    let mut l = AgentLoop::new("sa1", "s".into(), "b".into(), Vec::new().into(), budget);
    l.start();
    assert!(matches!(
        l.on_model(answer("prose", vec![])),
        Step::HandOff(_)
    ));
    assert!(matches!(l.on_repair(&[]), Step::Failed(reason) if reason.contains("repair")));
}

/// Issue 9, item 8: the window's ledger takes each turn as it arrives — no compaction
/// needed — and retires a commitment once a later turn reports it done.
#[test]
fn the_window_pins_turns_as_they_arrive() {
    use crate::compaction::PinClass;
    let mut l = fresh();
    l.start();
    let Step::CallTools(_) = l.on_model(answer(
        "I will reread src/net/retry.rs before handing off.",
        vec![grep_call()],
    )) else {
        panic!()
    };
    assert!(l
        .ledger()
        .pins()
        .iter()
        .any(|p| p.class == PinClass::Commitment));
    l.on_tools(vec![grep_result("sa1.1")]);
    l.on_model(answer(
        "Done: I reread src/net/retry.rs and it holds.",
        vec![grep_call()],
    ));
    assert!(
        !l.ledger()
            .pins()
            .iter()
            .any(|p| p.class == PinClass::Commitment),
        "{:?}",
        l.ledger().pins()
    );
}

/// Issue 9, item 13: a subagent's summary marker points to the raw turns it folded, which
/// the compaction note carries for the event log, with the digest the marker names.
#[test]
fn the_marker_names_the_digest_of_the_folded_turns_it_logs() {
    let budget = Budget {
        model_turns: 100,
        tool_calls: 100,
        tokens: 10_000_000,
    };
    let mut l =
        AgentLoop::new("sa1", "s".into(), "b".into(), Vec::new().into(), budget).with_window(8_000);
    l.start();
    let mut folded = None;
    for round in 0..30 {
        let text = format!(
            "Shard {round} keeps its blocks at /data/shard{round}/blocks.bin with checksum {}. {}",
            9000 + round,
            "The writer flushes them in order and the reader checks every block. ".repeat(6)
        );
        let Step::CallTools(calls) = l.on_model(answer(&text, vec![grep_call()])) else {
            panic!()
        };
        let results = calls
            .iter()
            .map(|c| ToolResult {
                call_id: c.id.clone(),
                name: "grep".into(),
                content: "no matches".into(),
                is_error: false,
                observations: vec![],
                denial: None,
            })
            .collect();
        let Step::CallModel(request) = l.on_tools(results) else {
            panic!("round {round}")
        };
        if let Some(note) = l
            .take_compactions()
            .into_iter()
            .find(|n| n.folded.is_some())
        {
            folded = Some((note.folded.unwrap(), request));
            break;
        }
    }
    let (folded, request) = folded.expect("a span was folded");
    assert_eq!(
        crate::digest::sha256_hex(folded.text.as_bytes()),
        folded.digest
    );
    assert!(folded.text.contains("/data/shard0/blocks.bin"));
    let marker = request
        .messages
        .iter()
        .find_map(|m| match m {
            Message::Compacted { text, .. } if text.starts_with("[compacted:") => {
                Some(text.clone())
            }
            _ => None,
        })
        .unwrap();
    assert!(
        marker.contains(&format!(
            "raw turns: in the run's event log (window_compacted, sha256 {}",
            &folded.digest[..16]
        )),
        "{marker}"
    );
}

fn cut(text: &str) -> Result<ModelResponse, ModelError> {
    let mut r = answer(text, vec![]).unwrap();
    r.stop = StopReason::MaxTokens;
    Ok(r)
}

#[test]
fn a_handoff_cut_at_max_tokens_is_never_handed_off() {
    let mut l = fresh();
    l.start();
    let Step::CallModel(request) = l.on_model(cut("## Settled conclusions\n- The retry")) else {
        panic!("a cut answer is sent back, not handed off")
    };
    let Some(Message::User { text }) = request.messages.last() else {
        panic!()
    };
    assert!(text.contains("cut off"));
    assert!(
        request.handoff,
        "a subagent's text answer is asked for as a handoff"
    );
    assert!(matches!(l.on_model(answer("done", vec![])), Step::HandOff(t) if t == "done"));
    let mut refused = answer("I can't help with that.", vec![]).unwrap();
    refused.stop = StopReason::Refusal;
    let mut l = AgentLoop::new(
        "sa2",
        "s".into(),
        "b".into(),
        Vec::new().into(),
        Budget::default(),
    );
    l.start();
    assert!(
        matches!(l.on_model(Ok(refused)), Step::Failed(r) if r.starts_with("the model refused"))
    );
}

#[test]
fn the_cost_cap_asks_for_a_handoff_then_stops() {
    let price = Price {
        input: 1.0,
        output: 1.0,
        cache_read: 0.0,
        cache_write: 0.0,
    };
    // A tool whose description is long: dropping the tools frees room.
    let tools: std::sync::Arc<[ToolSpec]> = vec![ToolSpec {
        name: "grep".into(),
        description: "searches ".repeat(100),
        parameters: json!({}),
    }]
    .into();
    let fresh = || {
        AgentLoop::new(
            "sa1",
            "s".into(),
            "b".into(),
            tools.clone(),
            Budget::default(),
        )
    };
    let Step::CallModel(first) = fresh().start() else {
        panic!()
    };
    // The cap is exactly what the first call may cost: the second, longer, would pass it.
    let cap = price.estimate_micros(&first);
    let mut l = fresh().with_price(Some(price), Some(cap));
    assert!(matches!(l.start(), Step::CallModel(r) if !r.tools.is_empty()));
    let Step::CallTools(_) = l.on_model(answer("", vec![grep_call()])) else {
        panic!()
    };
    assert_eq!(l.spent().cost_micros, 15);
    // The second call fits; the third would not: the second is the demand to hand off.
    let Step::CallModel(request) = l.on_tools(vec![grep_result("sa1.1")]) else {
        panic!()
    };
    assert!(request.tools.is_empty(), "no tools once the cap is near");
    assert!(
        matches!(request.messages.last(), Some(Message::User { text }) if text.contains("Budget near"))
    );
    // Answering with tools anyway ends it.
    assert!(matches!(
        l.on_model(answer("", vec![grep_call()])),
        Step::Failed(_)
    ));
    // A cap below a single call: stopped before anything is sent.
    let mut l = AgentLoop::new(
        "sa2",
        "s".into(),
        "b".into(),
        Vec::new().into(),
        Budget::default(),
    )
    .with_price(Some(price), Some(10));
    assert!(matches!(l.start(), Step::Failed(r) if r.contains("cost limit")));
}

/// Issue 26, item 1: with a ledger model, a turn the rule pass flags is queued for it (one
/// it pinned whole is not); a verbatim answer adds its pin, a paraphrase adds nothing.
#[test]
fn a_flagged_turn_is_queued_and_only_a_verbatim_answer_pins() {
    use crate::compaction::PinClass;
    let mut l = fresh().with_helpers(HelperModes {
        ledger: true,
        narrate: false,
    });
    l.start();
    let said = "We should keep the cache warm between calls.";
    l.on_model(answer(said, vec![grep_call()]));
    let asks = l.take_asks();
    let [HelperAsk::Ledger {
        turn,
        text,
        from_user: false,
    }] = asks.as_slice()
    else {
        panic!("{asks:?}")
    };
    assert_eq!(text, said);
    // A turn the rules pin whole is not asked about.
    l.on_tools(vec![grep_result("sa1.1")]);
    l.on_model(answer("I will reread src/a.rs.", vec![grep_call()]));
    assert!(l.take_asks().is_empty());
    let before = l.ledger().pins().len();
    let paraphrase = r#"[{"binding": true, "class": "commitment", "text": "keep caches warm"}]"#;
    let pass = l.on_ledger_answer(*turn, text, false, paraphrase).unwrap();
    assert_eq!((pass.accepted, pass.discarded), (0, 1));
    assert_eq!(l.ledger().pins().len(), before);
    let verbatim = r#"[{"binding": true, "class": "commitment", "text": "keep the cache warm between calls"}]"#;
    let pass = l.on_ledger_answer(*turn, text, false, verbatim).unwrap();
    assert_eq!(pass.accepted, 1);
    assert!(l
        .ledger()
        .pins()
        .iter()
        .any(|p| p.class == PinClass::Commitment
            && p.text == "keep the cache warm between calls"
            && p.turn == *turn));
    // Without a ledger model nothing is queued.
    let mut plain = AgentLoop::new(
        "sa2",
        "s".into(),
        "b".into(),
        Vec::new().into(),
        Budget::default(),
    );
    plain.start();
    plain.on_model(answer(said, vec![grep_call()]));
    assert!(plain.take_asks().is_empty());
}

/// A loop with a summary model whose window has just been folded: the summary's message as
/// queued, and the loop.
fn folded_with_narration() -> (AgentLoop, String) {
    let budget = Budget {
        model_turns: 100,
        tool_calls: 100,
        tokens: 10_000_000,
    };
    let mut l = AgentLoop::new("sa1", "s".into(), "b".into(), Vec::new().into(), budget)
        .with_window(8_000)
        .with_helpers(HelperModes {
            ledger: false,
            narrate: true,
        });
    l.start();
    for round in 0..40 {
        let text = if round == 0 {
            "Never delete /data/shard0/blocks.bin. The copy of shard 0 is outcome_unknown. Did the flush of shard 0 reach the disk?".to_string()
        } else {
            format!(
                "Shard {round} keeps its blocks at /data/shard{round}/blocks.bin with checksum {}. {}",
                9000 + round,
                "The writer flushes them in order and the reader checks every block. ".repeat(6)
            )
        };
        let Step::CallTools(calls) = l.on_model(answer(&text, vec![grep_call()])) else {
            panic!()
        };
        let results = calls.iter().map(|c| grep_result(&c.id)).collect();
        let Step::CallModel(_) = l.on_tools(results) else {
            panic!("round {round}")
        };
        let asks = l.take_asks();
        if let Some(HelperAsk::Narrate { template, .. }) = asks.into_iter().next() {
            return (l, template);
        }
    }
    panic!("no summary was made")
}

/// Issue 26, item 2: a narrative that calls an unknown outcome a failure, one that drops a
/// pinned constraint and one that closes an open item are each refused and the template
/// stands; a faithful one replaces it, its marker naming the model and the prompt revision.
#[test]
fn a_narrative_replaces_its_summary_only_when_it_keeps_the_skeleton() {
    let (mut l, template) = folded_with_narration();
    let body = template.split_once('\n').unwrap().1.to_string();
    assert!(body.contains("outcome_unknown"), "{body}");
    assert!(
        body.contains("Did the flush of shard 0 reach the disk?"),
        "{body}"
    );
    assert!(
        body.contains("Never delete /data/shard0/blocks.bin."),
        "{body}"
    );
    let in_window = |l: &AgentLoop, text: &str| {
        l.request()
            .messages
            .iter()
            .any(|m| matches!(m, Message::Compacted { text: t, .. } if t.contains(text)))
    };
    let failed = body.replace(
        "The copy of shard 0 is outcome_unknown.",
        "The copy of shard 0 failed (outcome_unknown).",
    );
    assert_ne!(failed, body);
    let dropped = body.replace("- Never delete /data/shard0/blocks.bin.\n", "- none\n");
    assert_ne!(dropped, body);
    let closed = body
        .replace("- Did the flush of shard 0 reach the disk?\n", "")
        .replace(
            "## Settled conclusions\n",
            "## Settled conclusions\n- Did the flush of shard 0 reach the disk? Yes.\n",
        );
    for (bad, why) in [
        (&failed, "`failed`"),
        (&dropped, "Never delete"),
        (&closed, "Did the flush"),
    ] {
        let problems = l.on_narrative(&template, bad, "small");
        assert!(
            problems.iter().any(|p| p.contains(why)),
            "{why}: {problems:?}"
        );
        assert!(in_window(&l, &template), "the template stands");
    }
    let faithful = body.replace(
        "## Settled conclusions\n",
        "## Settled conclusions\nIn short: the shards were read one by one, in order.\n",
    );
    assert_eq!(
        l.on_narrative(&template, &faithful, "small"),
        Vec::<String>::new()
    );
    assert!(!in_window(&l, &template));
    assert!(in_window(
        &l,
        "In short: the shards were read one by one, in order."
    ));
    assert!(in_window(
        &l,
        "narrated by small (narrative-1); raw turns: "
    ));
    // Promoted once: the template is no longer there to replace.
    let again = l.on_narrative(&template, &faithful, "small");
    assert!(again.iter().any(|p| p.contains("no longer in the window")));
}
