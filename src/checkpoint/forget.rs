//! Withdrawn sources, pure: `baton forget` turns a cited source into a tombstone — its id,
//! digest, classification, the reason and the decisions it influenced — and every later
//! context, brief and report shows it as content unavailable, while the event log keeps what
//! happened (nothing is rewritten: the withdrawal is one more event).

use serde::{Deserialize, Serialize};

use super::event::{LoggedEvent, RunEvent};
use crate::handoff::{Conclusion, ConclusionKind, Handoff, OpenItem};
use crate::source::SourceId;

/// Longest reason kept.
pub const REASON_MAX_CHARS: usize = 500;

/// What a withdrawn source leaves behind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// The source withdrawn, as given (a file, a file's lines, a document, a URL, a record or
    /// a call); a file without lines withdraws every range of it, a document without a span
    /// every span.
    pub source: String,
    /// SHA-256 of the cited text when it was accepted (the first citing handoff's; empty when
    /// none was recorded).
    pub digest: String,
    /// What kind of source it was and what it supported (`file lines; finding`).
    pub classification: String,
    /// Why it was withdrawn.
    pub reason: String,
    /// The decisions it influenced: the `handoff_accepted` and `lead_turn` events whose
    /// conclusions cited it.
    pub decisions: Vec<u64>,
    /// How many conclusions cited it.
    pub conclusions: usize,
}

/// A withdrawal as the checkpoint holds it: the tombstone and the event that withdrew it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithdrawnEntry {
    /// The tombstone.
    #[serde(flatten)]
    pub tombstone: Tombstone,
    /// The `source_forgotten` event.
    pub event: u64,
}

/// Whether `cited` is (part of) the withdrawn `source`.
pub fn covers(source: &SourceId, cited: &SourceId) -> bool {
    match (source, cited) {
        (SourceId::File { path, lines: None }, SourceId::File { path: p, .. }) => p == path,
        // A withdrawn range withdraws every cited range that overlaps it.
        (
            SourceId::File {
                path,
                lines: Some((a, b)),
            },
            SourceId::File {
                path: p,
                lines: Some((c, d)),
            },
        ) => p == path && a <= d && c <= b,
        (SourceId::Doc { id, span: None }, SourceId::Doc { id: d, .. }) => d == id,
        _ => source == cited,
    }
}

/// Whether a conclusion cites a withdrawn source.
pub fn cites_any(conclusion: &Conclusion, withdrawn: &[SourceId]) -> bool {
    conclusion
        .sources
        .iter()
        .any(|c| withdrawn.iter().any(|w| covers(w, c)))
}

/// The handoffs a run's log holds, with the event of each: accepted ones and the lead's own.
fn handoffs(events: &[LoggedEvent]) -> impl Iterator<Item = (u64, &Handoff)> {
    events.iter().filter_map(|e| match &e.event {
        RunEvent::HandoffAccepted { handoff, .. } => Some((e.seq, handoff)),
        RunEvent::LeadTurn {
            handoff: Some(handoff),
            ..
        } => Some((e.seq, handoff)),
        _ => None,
    })
}

fn kind_of(source: &SourceId) -> &'static str {
    match source {
        SourceId::File { lines: Some(_), .. } => "file lines",
        SourceId::File { lines: None, .. } => "file",
        SourceId::Url(_) => "url",
        SourceId::Doc { .. } => "document",
        SourceId::Event(_) => "event",
        SourceId::Record { kind, .. } if kind == "call" => "tool call",
        SourceId::Record { .. } => "record",
    }
}

/// The tombstone of `source` in a run's log, or why it cannot be withdrawn: the reason is
/// empty or too long, or no conclusion of the run cites it, or it is withdrawn already.
pub fn tombstone(
    events: &[LoggedEvent],
    source: &SourceId,
    reason: &str,
) -> Result<Tombstone, String> {
    // No key the process holds is kept in the log.
    let reason = crate::redact::scrubbed(crate::text::one_line(reason));
    if reason.is_empty() {
        return Err("the reason is empty: say why the source is withdrawn".to_string());
    }
    if reason.chars().count() > REASON_MAX_CHARS {
        return Err(format!("the reason is over {REASON_MAX_CHARS} characters"));
    }
    let already = events.iter().any(|e| match &e.event {
        RunEvent::SourceForgotten { tombstone } => {
            SourceId::parse(&tombstone.source).is_ok_and(|w| covers(&w, source))
        }
        _ => false,
    });
    if already {
        return Err(format!("{source} is withdrawn already"));
    }
    let mut decisions = Vec::new();
    let mut conclusions = 0;
    let mut roles: Vec<&str> = Vec::new();
    let mut digest = String::new();
    for (seq, handoff) in handoffs(events) {
        let citing: Vec<&Conclusion> = handoff
            .settled_conclusions
            .iter()
            .filter(|c| cites_any(c, std::slice::from_ref(source)))
            .collect();
        if citing.is_empty() {
            continue;
        }
        decisions.push(seq);
        conclusions += citing.len();
        for c in citing {
            let role = match c.kind {
                ConclusionKind::Finding => "finding",
                ConclusionKind::NegativeEvidence => "negative evidence",
            };
            if !roles.contains(&role) {
                roles.push(role);
            }
        }
    }
    if decisions.is_empty() {
        return Err(format!("no conclusion of the run cites {source}"));
    }
    for e in events {
        if let RunEvent::HandoffAccepted {
            evidence_digests, ..
        } = &e.event
        {
            if let Some(d) = evidence_digests
                .iter()
                .find(|(id, _)| SourceId::parse(id).is_ok_and(|c| covers(source, &c)))
            {
                digest = d.1.clone();
                break;
            }
        }
    }
    Ok(Tombstone {
        source: source.to_string(),
        digest,
        classification: format!("{}; {}", kind_of(source), roles.join(", ")),
        reason,
        decisions,
        conclusions,
    })
}

/// The constraint a withdrawn file leaves: never read it again in this run (a resume, a
/// fork), so its text cannot come back through a tool; none for another kind of source.
pub fn no_reading(tombstone: &Tombstone) -> Option<RunEvent> {
    let Ok(SourceId::File { path, .. }) = SourceId::parse(&tombstone.source) else {
        return None;
    };
    let text = format!(
        "Never read {path}: it was withdrawn ({}).",
        tombstone.reason
    );
    Some(RunEvent::ConstraintStated {
        normalised: crate::text::normalise(&text),
        text,
        provenance: "baton forget".to_string(),
        rules: vec![crate::policy::Rule::ReadScope {
            only_under: Vec::new(),
            never_under: vec![path],
        }],
        untyped: Vec::new(),
        warnings: Vec::new(),
    })
}

/// The sources a run's log withdrew, with the tombstones.
pub fn withdrawn(events: &[LoggedEvent]) -> Vec<(SourceId, Tombstone)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            RunEvent::SourceForgotten { tombstone } => SourceId::parse(&tombstone.source)
                .ok()
                .map(|s| (s, tombstone.clone())),
            _ => None,
        })
        .collect()
}

/// The sources a checkpoint withdrew, with the tombstones.
pub fn withdrawn_in(cp: &super::Checkpoint) -> Vec<(SourceId, Tombstone)> {
    cp.withdrawn
        .iter()
        .filter_map(|w| {
            SourceId::parse(&w.tombstone.source)
                .ok()
                .map(|s| (s, w.tombstone.clone()))
        })
        .collect()
}

/// What a reader is shown in a withdrawn source's place.
pub fn unavailable(tombstone: &Tombstone) -> String {
    format!(
        "{}: content unavailable (withdrawn: {})",
        tombstone.source, tombstone.reason
    )
}

/// Takes every conclusion citing a withdrawn source out of `handoff`; each becomes an open
/// item naming the source and the reason, never its text. How many were taken.
pub fn withdraw(handoff: &mut Handoff, withdrawn: &[(SourceId, Tombstone)]) -> usize {
    if withdrawn.is_empty() {
        return 0;
    }
    let ids: Vec<SourceId> = withdrawn.iter().map(|(s, _)| s.clone()).collect();
    let (gone, kept): (Vec<Conclusion>, Vec<Conclusion>) =
        std::mem::take(&mut handoff.settled_conclusions)
            .into_iter()
            .partition(|c| cites_any(c, &ids));
    handoff.settled_conclusions = kept;
    for c in &gone {
        let by: Vec<String> = withdrawn
            .iter()
            .filter(|(s, _)| c.sources.iter().any(|cited| covers(s, cited)))
            .map(|(_, t)| unavailable(t))
            .collect();
        handoff.open_items.push(OpenItem {
            item: format!("Withdrawn: a conclusion citing {}", by.join("; ")),
            stuck_on: "its source was withdrawn (`baton forget`); rerun the work without it if it is still needed"
                .to_string(),
        });
    }
    gone.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> SourceId {
        SourceId::parse(s).unwrap()
    }

    #[test]
    fn a_file_withdraws_its_ranges_and_a_range_only_itself() {
        assert!(covers(&id("src/a.rs"), &id("src/a.rs:3-9")));
        assert!(covers(&id("src/a.rs:3-9"), &id("src/a.rs:3-9")));
        assert!(!covers(&id("src/a.rs:3-9"), &id("src/a.rs:10")));
        assert!(
            covers(&id("src/a.rs:7"), &id("src/a.rs:6-9")),
            "an overlapping range"
        );
        assert!(!covers(&id("src/a.rs"), &id("src/ab.rs:1")));
        assert!(covers(&id("call:sa1.2"), &id("call:sa1.2")));
        // Every other source kind: a document whole covers its spans; a URL and a record only
        // themselves.
        assert!(covers(
            &id("doc:guide/intro.html"),
            &id("doc:guide/intro.html#retries")
        ));
        assert!(!covers(
            &id("doc:guide/intro.html#retries"),
            &id("doc:guide/intro.html#other")
        ));
        assert!(covers(
            &id("https://example.org/a"),
            &id("https://example.org/a")
        ));
        assert!(!covers(
            &id("https://example.org/a"),
            &id("https://example.org/b")
        ));
        assert!(covers(&id("order:A-1234"), &id("order:A-1234")));
        assert!(!covers(&id("order:A-1234"), &id("order:A-1235")));
        assert!(!covers(&id("call:sa1.2"), &id("call:sa1.20")));
    }

    #[test]
    fn a_withdrawn_conclusion_leaves_an_open_item_without_its_text() {
        let mut handoff = crate::handoff::parse(
            "## Settled conclusions\n- `secret_fn` holds the key. [src/a.rs:3]\n- `b` is here. [src/b.rs:1]\n## Open items\n## Hard constraints\n- none\n",
        )
        .handoff;
        let t = Tombstone {
            source: "src/a.rs".into(),
            digest: "ab".into(),
            classification: "file; finding".into(),
            reason: "licence".into(),
            decisions: vec![7],
            conclusions: 1,
        };
        assert_eq!(withdraw(&mut handoff, &[(id("src/a.rs"), t)]), 1);
        assert_eq!(handoff.settled_conclusions.len(), 1);
        let text = serde_json::to_string(&handoff).unwrap();
        assert!(!text.contains("secret_fn"), "{text}");
        assert!(text.contains("src/a.rs: content unavailable (withdrawn: licence)"));
    }
}
