//! The handoff contract, table-driven: realistic handoffs — well-formed, lenient variants, one
//! or more per violation code, and the failures models produce in the wild — each with its
//! verdict and codes, checked against in-memory files and an observation log.

use std::collections::{BTreeSet, HashSet};

use baton::testing::MemoryFiles;
use baton::{validate, Check, Observation, ObservationLog, ViolationCode as V};

use crate::support::RETRY_RS;

const LIB_RS: &str = "//! netkit.\npub mod net;\npub mod storage;\n";

fn files() -> MemoryFiles {
    let mut f = MemoryFiles::new();
    f.insert("src/net/retry.rs", RETRY_RS);
    f.insert("src/lib.rs", LIB_RS);
    f.insert("README.md", "# netkit\n");
    f.insert(
        "docs/guide.md",
        "# Guide\nRetries back off exponentially.\n",
    );
    f.insert(
        "min.js",
        &format!("var a = 1; {} var tail = 2;\n", "x();".repeat(100)),
    );
    f
}

/// The corpus's documents.
fn docs() -> HashSet<String> {
    ["guide".to_string(), "manual".to_string()].into()
}

/// The subagent read retry.rs whole, searched for `gzip` (nothing) and `delay` (5 lines),
/// read line 1 of docs/guide.md, saw the first 20 characters of min.js's one long line, read
/// the span `intro` of the document `guide`, fetched one URL, was returned one ticket, and
/// never read src/lib.rs.
fn log() -> ObservationLog {
    let mut log = ObservationLog::default();
    log.record([
        Observation::Lines {
            call_id: "sa1.1".into(),
            path: "src/net/retry.rs".into(),
            start: 1,
            end: 22,
        },
        Observation::Searched {
            call_id: "sa1.2".into(),
            pattern: "gzip".into(),
            scope: vec![".".into()],
            matches: 0,
            files_searched: 9,
            files_skipped: 0,
            case_insensitive: false,
            fixed_string: false,
            not_searched: 0,
            not_searched_names: Vec::new(),
        },
        Observation::Searched {
            call_id: "sa1.3".into(),
            pattern: "delay".into(),
            scope: vec![".".into()],
            matches: 5,
            files_searched: 9,
            files_skipped: 0,
            case_insensitive: false,
            fixed_string: false,
            not_searched: 0,
            not_searched_names: Vec::new(),
        },
        // The search's hit lines, as grep shows them.
        Observation::Lines {
            call_id: "sa1.3".into(),
            path: "src/net/retry.rs".into(),
            start: 17,
            end: 18,
        },
        Observation::Lines {
            call_id: "sa1.4".into(),
            path: "README.md".into(),
            start: 1,
            end: 1,
        },
        Observation::Lines {
            call_id: "sa1.5".into(),
            path: "docs/guide.md".into(),
            start: 1,
            end: 1,
        },
        Observation::LinePart {
            call_id: "sa1.6".into(),
            path: "min.js".into(),
            line: 1,
            chars: 20,
        },
        Observation::document("guide", Some("intro"), "Retries back off exponentially.")
            .made_by("sa1.7"),
        Observation::url(
            "https://example.com/fetched",
            "Each retry waits twice as long.",
        )
        .made_by("sa1.8"),
        Observation::record("ticket", "T-7", "[open] retries are slow on mobile").made_by("sa1.9"),
        // What a tool showed without its text: its identity only.
        Observation::Url {
            call_id: "sa1.12".into(),
            url: "https://example.com/bare".into(),
            text: None,
            digest: None,
        },
        Observation::Record {
            call_id: "sa1.13".into(),
            record_kind: "ticket".into(),
            id: "T-9".into(),
            text: None,
            digest: None,
        },
        // A text too long to keep: its digest only.
        Observation::record(
            "ticket",
            "T-long",
            &"x".repeat(baton::MAX_OBSERVED_TEXT + 1),
        )
        .made_by("sa1.11"),
        Observation::Record {
            call_id: "sa1.10".into(),
            record_kind: "event".into(),
            id: "12".into(),
            text: None,
            digest: None,
        },
    ]);
    log
}

const OK_TAIL: &str = "## Open items\n- Callers were not traced — stuck: only retry.rs was read\n## Hard constraints\n- none\n";

fn with_settled(settled: &str) -> String {
    format!("## Settled conclusions\n{settled}{OK_TAIL}")
}

struct Case {
    name: &'static str,
    text: String,
    codes: &'static [V],
}

fn case(name: &'static str, text: impl Into<String>, codes: &'static [V]) -> Case {
    Case {
        name,
        text: text.into(),
        codes,
    }
}

fn cases() -> Vec<Case> {
    let good =
        "- `next_delay` doubles the delay per attempt up to the cap. [src/net/retry.rs:18-21]\n";
    vec![
        // Well-formed.
        case("minimal", with_settled(good), &[]),
        case("empty sections with none", "## Settled conclusions\n## Open items\n## Hard constraints\n- none\n", &[]),
        case("several sources in one bracket", with_settled("- `RetryPolicy` and `next_delay` live in one file. [src/net/retry.rs:6, src/net/retry.rs:18]\n"), &[]),
        case("sources in two brackets", with_settled("- `RetryPolicy` has `cap_ms`. [src/net/retry.rs:6-9] [src/net/retry.rs:8]\n"), &[]),
        case("negative evidence citing an empty search", with_settled("- Negative evidence: no line matches `gzip` in the tree (9 files). [call:sa1.2]\n"), &[]),
        case("whole-file source that was read", with_settled("- The README is a title only. [README.md]\n"), &[]),
        case("quote spanning lines", with_settled("- It computes `let doubled = self.base_ms.saturating_mul(1u64 << attempt.min(31)); Duration::from_millis(doubled.min(self.cap_ms))`. [src/net/retry.rs:19-20]\n"), &[]),
        case("hard constraint with a source", "## Settled conclusions\n## Open items\n## Hard constraints\n- Never wait longer than `cap_ms`. [src/net/retry.rs:8]\n", &[]),
        case("continuation line folded into the item", with_settled("- `next_delay` doubles the delay\n  per attempt up to the cap. [src/net/retry.rs:18-21]\n"), &[]),
        case("code fence around it", format!("```markdown\n{}```", with_settled(good)), &[]),
        case("json form", r#"{"settled_conclusions":[{"claim":"`next_delay` doubles the delay.","sources":["src/net/retry.rs:18-21"]}],"open_items":[],"hard_constraints":[]}"#, &[]),
        case("json negative evidence", r#"{"settled_conclusions":[{"claim":"no gzip anywhere","sources":["call:sa1.2"],"kind":"negative_evidence"}],"open_items":[{"item":"x","stuck_on":"y"}],"hard_constraints":[]}"#, &[]),
        // Lenient variants.
        case("bold headings with colons", format!("**Settled Conclusions:**\n{good}**Open Items:**\n- x — stuck: y\n**Hard Constraints:**\n- None.\n"), &[]),
        case("upper-case headings, level 3", format!("### SETTLED CONCLUSIONS\n{good}### OPEN ITEMS\n### HARD CONSTRAINTS\nNone\n"), &[]),
        case("numbered and starred bullets", "## Settled conclusions\n1. `next_delay` doubles the delay per attempt. [src/net/retry.rs:18-21]\n## Open items\n* x — stuck on: y\n## Hard constraints\n+ none\n", &[]),
        case("plain headings without markers", format!("Settled conclusions\n{good}Open items\nHard constraints\n- none\n"), &[]),
        case("en dash in a range and ./ prefix", with_settled("- `next_delay` doubles the delay. [./src/net/retry.rs:18\u{2013}21]\n"), &[]),
        // Structure.
        case("prose instead of a handoff", "I looked at retry.rs and next_delay doubles the delay.", &[V::SectionMissing, V::ConstraintsOmitted]),
        case("narration before the sections", format!("Here is my handoff:\n{}", with_settled(good)), &[V::TextOutsideSections]),
        case("open items missing", format!("## Settled conclusions\n{good}## Hard constraints\n- none\n"), &[V::SectionMissing]),
        case("hard constraints omitted", format!("## Settled conclusions\n{good}## Open items\n"), &[V::ConstraintsOmitted]),
        case("hard constraints empty without none", format!("## Settled conclusions\n{good}## Open items\n## Hard constraints\n"), &[V::ConstraintsEmpty]),
        case("section duplicated", format!("## Settled conclusions\n{good}## Settled conclusions\n{good}{OK_TAIL}"), &[V::SectionDuplicated]),
        case("sections out of order", format!("## Open items\n## Settled conclusions\n{good}## Hard constraints\n- none\n"), &[V::SectionOutOfOrder]),
        case("conclusion without a source", with_settled("- `next_delay` doubles the delay.\n"), &[V::SourceMissing]),
        case("empty bullet", with_settled("- \n"), &[V::ItemEmpty, V::SourceMissing]),
        case("empty open item", "## Settled conclusions\n## Open items\n- — stuck: nothing\n## Hard constraints\n- none\n", &[V::ItemEmpty]),
        case("stub that points elsewhere", with_settled("- See above. [src/net/retry.rs:18]\n"), &[V::PointerOnly]),
        case("as delivered earlier", with_settled("- The answer was as delivered earlier. [src/net/retry.rs:18]\n"), &[V::PointerOnly]),
        case("details in the previous message", with_settled("- Details in the previous message. [src/net/retry.rs:18]\n"), &[V::PointerOnly]),
        case("malformed source: words", with_settled("- `next_delay` doubles. [the retry file]\n"), &[V::SourceMalformed]),
        case("malformed source: reversed range", with_settled("- `next_delay` doubles. [src/net/retry.rs:21-18]\n"), &[V::SourceMalformed]),
        case("malformed source: upper-case kind", with_settled("- `next_delay` doubles. [Retry:next]\n"), &[V::SourceMalformed]),
        case("json missing a key", r#"{"settled_conclusions":[],"open_items":[]}"#, &[V::JsonShape]),
        case("json unknown key", r#"{"settled_conclusions":[],"open_items":[],"hard_constraints":[],"summary":"done"}"#, &[V::JsonShape]),
        case("json wrong type", r#"{"settled_conclusions":"none","open_items":[],"hard_constraints":[]}"#, &[V::JsonShape]),
        case("json syntax error", r#"{"settled_conclusions":[,"open_items":[]}"#, &[V::JsonInvalid]),
        case("json conclusion without sources", r#"{"settled_conclusions":[{"claim":"x is y","sources":[]}],"open_items":[],"hard_constraints":[]}"#, &[V::SourceMissing]),
        // Resolution.
        case("file that does not exist", with_settled("- `next_delay` doubles. [src/net/backoff.rs:18-21]\n"), &[V::FileNotFound]),
        case("absolute path", with_settled("- `next_delay` doubles. [/etc/passwd:1]\n"), &[V::PathOutsideRoot]),
        case("path climbing out", with_settled("- `next_delay` doubles. [../secret.rs:1]\n"), &[V::PathOutsideRoot]),
        case("wrong line range past the end", with_settled("- `next_delay` doubles. [src/net/retry.rs:18-40]\n"), &[V::LineOutOfRange]),
        case("unknown document", with_settled("- RFC 9110 defines retries. [doc:rfc9110#9.2]\n"), &[V::DocUnknown]),
        // Quotation under a whole-file citation: the quote must be in the file, in what was shown.
        case("whole-file citation, quote nowhere in the file", with_settled("- The file says `text that is nowhere in it` plainly. [src/net/retry.rs]\n"), &[V::QuoteNotFound]),
        case("whole-file citation, true quote", with_settled("- The file defines `pub fn next_delay(&self, attempt: u32) -> Duration`. [src/net/retry.rs]\n"), &[]),
        case("whole-file citation, quote from lines never shown", with_settled("- The guide says `back off exponentially`. [docs/guide.md]\n"), &[V::QuoteNotFound]),
        case("json whole-file citation, quote nowhere in the file", r#"{"settled_conclusions":[{"claim":"It says `text that is nowhere in it`.","sources":["src/net/retry.rs"]}],"open_items":[],"hard_constraints":[]}"#, &[V::QuoteNotFound]),
        case("json whole-file citation, true quote", r#"{"settled_conclusions":[{"claim":"It has `pub struct RetryPolicy`.","sources":["src/net/retry.rs"]}],"open_items":[],"hard_constraints":[]}"#, &[]),
        // A long line shown in part: quotes rest on the part shown.
        case("quote within the part of a long line shown", with_settled("- It starts `var a = 1;`. [min.js:1]\n"), &[]),
        case("quote past the part of a long line shown", with_settled("- It ends `var tail = 2;`. [min.js:1]\n"), &[V::QuoteNotFound]),
        // What other tools show: documents, URLs, records.
        case("document span read", with_settled("- The guide's intro covers retries. [doc:guide#intro]\n"), &[]),
        case("whole document cited after reading a span of it", with_settled("- The guide covers retries. [doc:guide]\n"), &[]),
        case("document span never read", with_settled("- The guide's outro covers retries. [doc:guide#outro]\n"), &[V::DocNotObserved]),
        case("document never read", with_settled("- The manual covers retries. [doc:manual]\n"), &[V::DocNotObserved]),
        case("url fetched", with_settled("- The page says retries back off. [https://example.com/fetched#top]\n"), &[]),
        case("record returned", with_settled("- Ticket T-7 reports slow retries. [ticket:T-7]\n"), &[]),
        case("other record of a kind returned", with_settled("- Ticket T-8 reports slow retries. [ticket:T-8]\n"), &[V::RecordNotObserved]),
        case("event shown", with_settled("- The run planned two shards. [event:12]\n"), &[]),
        case("event never shown", with_settled("- The run planned two shards. [event:made-up]\n"), &[V::RecordNotObserved]),
        // Observation.
        case("citation of a file never read", with_settled("- `pub mod net;` is declared. [src/lib.rs:2]\n"), &[V::NotObserved]),
        case("citation of lines never read, in a file read in part", with_settled("- The README says `netkit`. [README.md:1-2]\n"), &[V::LineOutOfRange]),
        case("unknown call", with_settled("- Negative evidence: nothing for `brotli`. [call:sa1.99]\n"), &[V::CallUnknown]),
        case("negative evidence citing a search that matched", with_settled("- Negative evidence: no `delay` anywhere. [call:sa1.3]\n"), &[V::NegativeNotEmpty]),
        case("url never fetched", with_settled("- Retries follow RFC 9110. [https://www.rfc-editor.org/rfc/rfc9110]\n"), &[V::UrlNotFetched]),
        case("record never returned", with_settled("- Order A-1234 was retried. [order:A-1234]\n"), &[V::RecordNotObserved]),
        // What a record, a URL or a document showed holds its quotes, as a file's lines do.
        case("quote of a record's text", with_settled("- T-7 says `retries are slow on mobile`. [ticket:T-7]\n"), &[]),
        case("quote not in a record's text", with_settled("- T-7 says `retries are fast`. [ticket:T-7]\n"), &[V::QuoteNotFound]),
        case("quote of a record whose text was too long to keep", with_settled("- T-long says `xxx`. [ticket:T-long]\n"), &[V::QuoteUnchecked]),
        case("quote of a URL's content", with_settled("- The page says `twice as long`. [https://example.com/fetched]\n"), &[]),
        case("quote not in a URL's content", with_settled("- The page says `three times as long`. [https://example.com/fetched]\n"), &[V::QuoteNotFound]),
        case("quote of a document span's text", with_settled("- The guide says `back off exponentially`. [doc:guide#intro]\n"), &[]),
        case("quote not in a document span's text", with_settled("- The guide says `never retry`. [doc:guide#intro]\n"), &[V::QuoteNotFound]),
        // Quotation.
        case("quote not in the cited lines", with_settled("- `next_delay` triples the delay: `base_ms * 3`. [src/net/retry.rs:18-21]\n"), &[V::QuoteNotFound]),
        // Issue 20, item 9: byte-exact within a line; a quote spanning lines may join them.
        case("quote respaced within a line", with_settled("- It reads `let doubled = self.base_ms.saturating_mul(1u64  <<  attempt.min(31));`. [src/net/retry.rs:19]\n"), &[V::QuoteNotFound]),
        case("quote joining two lines with a space", with_settled("- It ends `doubled.min(self.cap_ms)) }`. [src/net/retry.rs:20-21]\n"), &[]),
        case("quote from other lines than cited", with_settled("- `pub struct RetryPolicy` is here. [src/net/retry.rs:18-21]\n"), &[V::QuoteNotFound]),
        // Issue 20, item 1: a `call:ID` citation is checked like a file citation — its quotes
        // against what that call showed; a claim resting on empty searches alone is negative
        // evidence; a source inside a claim's text is never taken for a citation.
        case("quote under a call that read the lines", with_settled("- `next_delay` computes `self.base_ms.saturating_mul(1u64 << attempt.min(31))`. [call:sa1.1]\n"), &[]),
        case("quote under a search's hit lines", with_settled("- The search for delay found `pub fn next_delay(&self, attempt: u32) -> Duration {`. [call:sa1.3]\n"), &[]),
        case("quote under a call that did not show it", with_settled("- `open_db` wipes the disk with `rm -rf /`. [call:sa1.1]\n"), &[V::QuoteNotFound]),
        case("quote past a search's hit lines", with_settled("- The search found `let doubled`. [call:sa1.3]\n"), &[V::QuoteNotFound]),
        case("finding resting only on an empty search", with_settled("- The database is never opened anywhere in the tree. [call:sa1.2]\n"), &[V::NegativeUnmarked]),
        case("quote resting only on an empty search", with_settled("- Nothing calls `gzip`. [call:sa1.2]\n"), &[V::NegativeUnmarked, V::QuoteUnchecked]),
        case("json finding resting only on an empty search", r#"{"settled_conclusions":[{"claim":"no gzip anywhere","sources":["call:sa1.2"]}],"open_items":[],"hard_constraints":[]}"#, &[V::NegativeUnmarked]),
        case("quote resting on a URL whose content was not kept", with_settled("- The page says `retries back off`. [https://example.com/bare]\n"), &[V::QuoteUnchecked]),
        case("quote resting on a record whose text was not kept", with_settled("- Ticket T-9 says `slow`. [ticket:T-9]\n"), &[V::QuoteUnchecked]),
        case("a source inside the claim's text", with_settled("- The cap is set in [docs/secret.md:2] to 30 s: `cap_ms`. [src/net/retry.rs:8]\n"), &[V::SourceInClaim]),
        case("json source inside the claim's text", r#"{"settled_conclusions":[{"claim":"It is in [src/lib.rs:2] too: `cap_ms`.","sources":["src/net/retry.rs:8"]}],"open_items":[],"hard_constraints":[]}"#, &[V::SourceInClaim]),
        case("brackets that are not sources", with_settled("- `next_delay` takes [1] an attempt, see [the notes]; `self.base_ms`. [src/net/retry.rs:18-21]\n"), &[]),
        // Several at once.
        case("many violations at once", "Sure! Here you go.\n## Settled conclusions\n- See above.\n- `x` is y. [src/none.rs:1]\n## Open items\n", &[V::TextOutsideSections, V::PointerOnly, V::SourceMissing, V::FileNotFound, V::ConstraintsOmitted]),
    ]
}

#[test]
fn every_handoff_gets_its_verdict_and_codes() {
    let files = files();
    let log = log();
    let docs = docs();
    let check = Check {
        files: Some(&files),
        observations: Some(&log),
        docs: Some(&docs),
    };
    let all = cases();
    assert!(all.len() >= 40, "{} cases", all.len());
    let mut failures = Vec::new();
    for c in &all {
        let parsed = validate(&c.text, &check);
        let got: BTreeSet<V> = parsed.violations.iter().map(|v| v.code).collect();
        let want: BTreeSet<V> = c.codes.iter().copied().collect();
        if got != want {
            failures.push(format!(
                "{}: want {want:?}, got {:?}",
                c.name, parsed.violations
            ));
        }
        for v in &parsed.violations {
            assert!(!v.message.contains('\n'), "{}: one-line messages", c.name);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_code_is_exercised_by_the_table() {
    let covered: BTreeSet<V> = cases()
        .iter()
        .flat_map(|c| c.codes.iter().copied())
        .collect();
    let untested: Vec<&V> = V::ALL
        .iter()
        .filter(|c| !covered.contains(c) && !matches!(c, V::TooLarge | V::FileUnreadable))
        .collect();
    assert!(untested.is_empty(), "codes with no case: {untested:?}");
}

#[test]
fn without_a_log_observation_is_not_checked() {
    let files = files();
    let check = Check {
        files: Some(&files),
        observations: None,
        docs: None,
    };
    let parsed = validate(
        &with_settled("- `pub mod net;` is declared. [src/lib.rs:2]\n"),
        &check,
    );
    assert!(parsed.violations.is_empty(), "{:?}", parsed.violations);
}

#[test]
fn violation_lines_point_at_the_item() {
    let files = files();
    let check = Check {
        files: Some(&files),
        observations: None,
        docs: None,
    };
    let text =
        with_settled("- fine `next_delay`. [src/net/retry.rs:18]\n- `gone`. [src/gone.rs:1]\n");
    let parsed = validate(&text, &check);
    assert_eq!(parsed.violations.len(), 1);
    assert_eq!(parsed.violations[0].line, 3);
}

#[test]
fn the_json_schema_matches_the_parser() {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../contracts/handoff.schema.json")).unwrap();
    let keys = |v: &serde_json::Value| -> BTreeSet<String> {
        v.as_object().unwrap().keys().cloned().collect()
    };
    let required: BTreeSet<String> = schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    assert_eq!(required, keys(&schema["properties"]));
    let h = baton::Handoff {
        settled_conclusions: vec![baton::Conclusion {
            claim: "c".into(),
            sources: vec![baton::SourceId::parse("a.rs:1").unwrap()],
            kind: baton::ConclusionKind::NegativeEvidence,
        }],
        open_items: vec![baton::OpenItem {
            item: "i".into(),
            stuck_on: "s".into(),
        }],
        hard_constraints: vec![baton::HardConstraint {
            constraint: "k".into(),
            sources: vec![baton::SourceId::parse("a.rs:2").unwrap()],
        }],
    };
    let rendered: serde_json::Value = serde_json::from_str(&h.to_json()).unwrap();
    assert_eq!(keys(&rendered), required);
    for (key, item) in [
        ("settled_conclusions", &rendered["settled_conclusions"][0]),
        ("open_items", &rendered["open_items"][0]),
        ("hard_constraints", &rendered["hard_constraints"][0]),
    ] {
        let allowed = keys(&schema["properties"][key]["items"]["properties"]);
        assert_eq!(
            keys(item),
            allowed,
            "{key}: every field the parser writes, and only those, is in the schema"
        );
    }
    let pattern =
        regex::Regex::new(schema["$defs"]["source"]["pattern"].as_str().unwrap()).unwrap();
    for source in [
        "src/a.rs",
        "src/a.rs:3-9",
        "call:sa1.2",
        "doc:rfc#3",
        "https://x.dev/a",
        "event:7",
        "order:A-1",
        r#""src/a b, c.rs":3-9"#,
        r#""we:ird\"name.md""#,
    ] {
        assert!(pattern.is_match(source), "{source}");
        assert!(baton::SourceId::parse(source).is_ok(), "{source}");
    }
}

/// Issue 9, item 2: in a run there is no corpus to resolve against, so a `doc:` citation
/// stands on what the subagent's tools showed: a span read passes, a span never read fails.
#[test]
fn without_a_corpus_a_doc_citation_stands_on_its_observation() {
    let files = files();
    let log = log();
    let check = Check {
        files: Some(&files),
        observations: Some(&log),
        docs: None,
    };
    let read = validate(
        &with_settled("- The guide's intro covers retries. [doc:guide#intro]\n"),
        &check,
    );
    assert!(read.violations.is_empty(), "{:?}", read.violations);
    let unread = validate(
        &with_settled("- The manual covers retries. [doc:manual#2]\n"),
        &check,
    );
    let codes: Vec<V> = unread.violations.iter().map(|v| v.code).collect();
    assert_eq!(codes, vec![V::DocNotObserved]);
}
