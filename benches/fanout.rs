//! Where a 10,000-subagent fan-out spends its time, piece by piece: a subagent's context
//! selected through the index and compiled against the checkpoint of 10,000 finished
//! subagents; the index brought up to that checkpoint from nothing; the merge of 10,000
//! accepted handoffs; and the rendering of the merged report. (Handoff parsing and validation:
//! `--bench validate`; event appends: `--bench event_log`.)
//!
//!     cargo bench --bench fanout

use baton::checkpoint::{project, EffectState, LoggedEvent, PlannedSubagent, RunEvent};
use baton::context::{compile_selected, load_roles, ContextIndex, Field, Focus};

use baton::tokens::{Bpe, CachedTokenizer, Tokenizer};
use baton::{merge_handoffs, Conclusion, Handoff, Observation, ObservationLog, SourceId};
use criterion::{criterion_group, criterion_main, Criterion};

const N: usize = 10_000;
const QUESTION: &str = "Where is each item defined?";

fn dir(i: usize) -> String {
    format!("d{i:05}")
}

fn handoff(i: usize) -> Handoff {
    let d = dir(i);
    Handoff {
        settled_conclusions: vec![Conclusion {
            claim: format!("`item_{d}` is defined here: `pub fn item_{d}() -> u64 {{`"),
            sources: vec![SourceId::parse(&format!("{d}/lib.rs:1-3")).unwrap()],
            kind: Default::default(),
        }],
        ..Handoff::default()
    }
}

fn observations(i: usize) -> ObservationLog {
    let d = dir(i);
    let mut log = ObservationLog::default();
    log.record([
        Observation::Searched {
            call_id: format!("sa{i}.1"),
            pattern: "item".into(),
            scope: vec![d.clone()],
            matches: 1,
            files_searched: 1,
            files_skipped: 0,
            case_insensitive: false,
            fixed_string: false,
            not_searched: 0,
            not_searched_names: Vec::new(),
        },
        Observation::Lines {
            call_id: format!("sa{i}.2"),
            path: format!("{d}/lib.rs"),
            start: 1,
            end: 3,
        },
    ]);
    log
}

/// The log of a run whose 10,000 subagents each read their shard and handed off.
fn events() -> Vec<LoggedEvent> {
    let mut events = vec![
        RunEvent::RunStarted {
            question: QUESTION.into(),
            root: "/work/tree".into(),
            model: "bench".into(),
            agents: 1024,
            max_subagents: N,
            budget: baton::Budget::default(),
            repairs: 2,
            shards: Some(N),
            tools: vec!["grep".into(), "read_file".into()],
            max_waves: None,
            task: Default::default(),
        },
        RunEvent::PlanRevised {
            subagents: (0..N)
                .map(|i| PlannedSubagent {
                    id: format!("sa{i}"),
                    scope: vec![dir(i)],
                    role: "explorer".into(),
                    question: None,
                })
                .collect(),
            reason: "bench".into(),
            left_out: Vec::new(),
            not_searched: 0,
            not_searched_names: Vec::new(),
        },
    ];
    for i in 0..N {
        let sub = format!("sa{i}");
        events.push(RunEvent::ToolCalled {
            subagent: sub.clone(),
            call_id: format!("{sub}.1"),
            tool: "read_file".into(),
            arguments: serde_json::json!({"path": format!("{}/lib.rs", dir(i))}),
            effect: EffectState::Executing,
            read_only: true,
            intent: String::new(),
        });
        events.push(RunEvent::ToolReturned {
            subagent: sub.clone(),
            call_id: format!("{sub}.1"),
            is_error: false,
            content_digest: "0".repeat(64),
            observations: Vec::new(),
            effect: EffectState::Completed,
        });
        events.push(RunEvent::HandoffAccepted {
            subagent: sub.clone(),
            handoff: handoff(i),
            repairs: 0,
            evidence_digests: Default::default(),
            dropped: Vec::new(),
        });
        events.push(RunEvent::SubagentEnded {
            subagent: sub,
            state: baton::SubagentState::HandedOff,
            error: None,
        });
    }
    events
        .into_iter()
        .enumerate()
        .map(|(i, event)| LoggedEvent {
            run_id: "bench".into(),
            seq: i as u64 + 1,
            at_ms: 0,
            event,
            prev: String::new(),
            digest: String::new(),
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let checkpoint = project("bench", &events());
    assert_eq!(checkpoint.evidence.len(), N);
    let roles = load_roles(None).expect("roles");
    let explorer = &roles["explorer"];
    // Optional fields are selected; mandatory ones are compiled whole.
    let fields: Vec<Field> = explorer.optional.iter().map(|o| o.field).collect();
    let tokenizer = CachedTokenizer::new(Bpe);
    let mut index = ContextIndex::default();
    index.sync(&checkpoint);
    let focus = Focus::new("sa4242", &[dir(4242)], QUESTION);
    let pick = index.select(&checkpoint, &focus, &fields);
    let compiled = compile_selected(
        &checkpoint,
        None,
        explorer,
        explorer.budget,
        &tokenizer,
        &pick,
    )
    .expect("fits");
    assert_eq!(Bpe.count(&compiled.text), compiled.tokens);
    assert!(
        pick.omitted.items as usize > 2 * (N - 100),
        "{}",
        pick.omitted.items
    );
    c.bench_function(
        "select + compile a subagent's context (10k-subagent checkpoint)",
        |b| {
            b.iter(|| {
                let pick = index.select(std::hint::black_box(&checkpoint), &focus, &fields);
                compile_selected(
                    &checkpoint,
                    None,
                    explorer,
                    explorer.budget,
                    &tokenizer,
                    &pick,
                )
            })
        },
    );
    c.bench_function("index a 10k-subagent checkpoint from nothing", |b| {
        b.iter(|| {
            let mut index = ContextIndex::default();
            index.sync(std::hint::black_box(&checkpoint));
            index
        })
    });

    let accepted: Vec<(Handoff, Vec<String>, ObservationLog)> = (0..N)
        .map(|i| (handoff(i), vec![dir(i)], observations(i)))
        .collect();
    let merged = merge_handoffs(&accepted);
    assert!(
        merged.settled_conclusions.len() >= N,
        "{}",
        merged.settled_conclusions.len()
    );
    let mut group = c.benchmark_group("10k handoffs");
    group.sample_size(10);
    group.bench_function("merge 10k accepted handoffs", |b| {
        b.iter(|| merge_handoffs(std::hint::black_box(&accepted)))
    });
    group.bench_function("render the merged report (markdown)", |b| {
        b.iter(|| std::hint::black_box(&merged).to_markdown())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
