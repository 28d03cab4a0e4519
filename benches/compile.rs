//! Compiling an 8,000-token explorer context from a checkpoint of 10,000 events holding 2,000
//! evidence items, with the BPE tokenizer's per-block cache warm (a recompile). Target: median
//! under 5 ms.
//!
//!     cargo bench --bench compile

use baton::checkpoint::{project, EffectState, LoggedEvent, PlannedSubagent, RunEvent};
use baton::context::{compile, load_roles};

use baton::tokens::{Bpe, CachedTokenizer, Tokenizer};
use baton::{Conclusion, Handoff, SourceId};
use criterion::{criterion_group, criterion_main, Criterion};

fn events() -> Vec<LoggedEvent> {
    let mut events = vec![
        RunEvent::RunStarted {
            question: "Where are the pipeline steps computed and cached?".into(),
            root: "/work/repo".into(),
            model: "offline".into(),
            agents: 4,
            max_subagents: 32,
            budget: baton::Budget::default(),
            repairs: 2,
            shards: None,
            tools: vec![
                "list_dir".into(),
                "glob".into(),
                "grep".into(),
                "read_file".into(),
            ],
            max_waves: None,
            task: Default::default(),
        },
        RunEvent::ConstraintStated {
            text: "Never modify anything under /migrations.".into(),
            normalised: "never modify anything under /migrations.".into(),
            provenance: "--constraint".into(),
            rules: Vec::new(),
            untyped: Vec::new(),
            warnings: Vec::new(),
        },
        RunEvent::ConstraintStated {
            text: "Only cite source files.".into(),
            normalised: "only cite source files.".into(),
            provenance: "question".into(),
            rules: Vec::new(),
            untyped: Vec::new(),
            warnings: Vec::new(),
        },
        RunEvent::PlanRevised {
            subagents: (1..=20)
                .map(|i| PlannedSubagent {
                    id: format!("sa{i}"),
                    scope: vec![format!("src/m{i}")],
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
    let mut call = 0;
    while events.len() < 10_000 - 20 {
        call += 1;
        let sub = format!("sa{}", call % 20 + 1);
        events.push(RunEvent::ToolCalled {
            subagent: sub.clone(),
            call_id: format!("{sub}.{call}"),
            tool: "grep".into(),
            arguments: serde_json::json!({"pattern": format!("term{call}")}),
            effect: EffectState::Executing,
            read_only: true,
            intent: String::new(),
        });
        events.push(RunEvent::ToolReturned {
            subagent: sub,
            call_id: format!("sa{}.{call}", call % 20 + 1),
            is_error: false,
            content_digest: "0".repeat(64),
            observations: vec![],
            effect: EffectState::Completed,
        });
    }
    for h in 1..=20 {
        let conclusions = (0..100)
            .map(|i| Conclusion {
                claim: format!(
                    "`step_{h}_{i}` in src/m{h}/part{i}.rs computes stage {i} of pipeline {h} and caches the result for the next stage"
                ),
                sources: vec![SourceId::parse(&format!("src/m{h}/part{i}.rs:{}-{}", i + 1, i + 20)).unwrap()],
                kind: Default::default(),
            })
            .collect();
        events.push(RunEvent::HandoffAccepted {
            subagent: format!("sa{h}"),
            handoff: Handoff {
                settled_conclusions: conclusions,
                ..Handoff::default()
            },
            repairs: 0,
            evidence_digests: Default::default(),
            dropped: Vec::new(),
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
    let events = events();
    assert_eq!(events.len(), 10_000);
    let checkpoint = project("bench", &events);
    assert_eq!(checkpoint.evidence.len(), 2_000);
    let roles = load_roles(None).expect("roles");
    let explorer = &roles["explorer"];
    let tokenizer = CachedTokenizer::new(Bpe);
    let compiled = compile(&checkpoint, None, explorer, 8_000, &tokenizer).expect("fits");
    assert!(
        compiled.tokens <= 8_000 && compiled.tokens > 7_000,
        "{}",
        compiled.tokens
    );
    assert_eq!(Bpe.count(&compiled.text), compiled.tokens);
    c.bench_function("compile 8k-token context (10k events, 2k evidence)", |b| {
        b.iter(|| {
            compile(
                std::hint::black_box(&checkpoint),
                None,
                explorer,
                8_000,
                &tokenizer,
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
