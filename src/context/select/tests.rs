//! Tests of relevance selection: scopes and neighbours, the index following its checkpoint,
//! the sums of what is left out, and mandatory fields kept whole.

use super::*;
use crate::checkpoint::EvidenceEntry;
use sha2::Digest;

fn checkpoint(sources: &[&str]) -> Checkpoint {
    let mut cp = crate::checkpoint::started_checkpoint_fixture();
    cp.evidence = sources
        .iter()
        .map(|s| EvidenceEntry {
            source: s.to_string(),
            digest: String::new(),
            excerpt: Some("fn main() {}".into()),
            tombstone: false,
            stale: None,
            subagent: "sa9".into(),
            event: 1,
        })
        .collect();
    cp
}

/// The sum recomputed without `ItemSum`: SHA-256 of `evidence NUL id` as big-endian words.
fn independent_sum(ids: &[&str]) -> String {
    let pairs: Vec<(&str, &str)> = ids.iter().map(|id| ("evidence", *id)).collect();
    independent_sum_of(&pairs)
}

/// The same over (field, id) pairs.
fn independent_sum_of(items: &[(&str, &str)]) -> String {
    let mut words = [0u64; 4];
    for (field, id) in items {
        let digest = sha2::Sha256::digest(format!("{field}\0{id}").as_bytes());
        for (i, word) in words.iter_mut().enumerate() {
            let bytes: [u8; 8] = digest[i * 8..i * 8 + 8].try_into().unwrap();
            *word = word.wrapping_add(u64::from_be_bytes(bytes));
        }
    }
    words.iter().map(|w| format!("{w:016x}")).collect()
}

#[test]
fn a_scope_selects_under_and_above_it_never_its_neighbours() {
    // `a.rs` and `a-x/` sort between `a` and `a/…`: neighbours, never under it.
    let cp = checkpoint(&[
        "a/x.rs:1-2",
        "a.rs:1",
        "a-x/f.rs",
        "a/b/y.rs",
        "ab/z.rs:3-4",
        "top.rs",
        "c/w.rs",
        "a",
    ]);
    let mut index = ContextIndex::default();
    index.sync(&cp);
    let sources = |pick: &Selection| -> Vec<String> {
        pick.of(Field::Evidence)
            .unwrap()
            .iter()
            .map(|&i| cp.evidence[i].source.clone())
            .collect()
    };
    let focus = Focus {
        subagent: "sa1".into(),
        scope: vec!["a".into()],
        terms: Vec::new(),
    };
    let pick = index.select(&cp, &focus, &[Field::Evidence]);
    assert_eq!(sources(&pick), ["a/x.rs:1-2", "a/b/y.rs", "a"]);
    assert_eq!(pick.omitted.items, 5);
    assert_eq!(
        pick.omitted.sum.hex(),
        independent_sum(&["a.rs:1", "a-x/f.rs", "ab/z.rs:3-4", "top.rs", "c/w.rs"])
    );
    // Under `a/b`: its own, and what is about `a` above it.
    let focus = Focus {
        scope: vec!["a/b".into()],
        ..focus
    };
    let pick = index.select(&cp, &focus, &[Field::Evidence]);
    assert_eq!(sources(&pick), ["a/b/y.rs", "a"]);
    // A file scope finds itself, and a word of the question finds a match elsewhere.
    let focus = Focus {
        subagent: "sa1".into(),
        scope: vec!["c/w.rs".into()],
        terms: vec!["top".into()],
    };
    let pick = index.select(&cp, &focus, &[Field::Evidence]);
    assert_eq!(sources(&pick), ["top.rs", "c/w.rs"]);
    // The whole tree: the latest items, by when they came.
    let focus = Focus {
        subagent: "sa1".into(),
        scope: vec![".".into()],
        terms: Vec::new(),
    };
    let pick = index.select(&cp, &focus, &[Field::Evidence]);
    assert_eq!(
        pick.of(Field::Evidence).unwrap(),
        (0..8).collect::<Vec<_>>()
    );
    let many: Vec<String> = (0..FIELD_CAP + 6).map(|i| format!("z{i}/f.rs")).collect();
    let many = checkpoint(&many.iter().map(String::as_str).collect::<Vec<_>>());
    let mut index = ContextIndex::default();
    index.sync(&many);
    let pick = index.select(&many, &focus, &[Field::Evidence]);
    assert_eq!(
        pick.of(Field::Evidence).unwrap(),
        (6..FIELD_CAP + 6).collect::<Vec<_>>()
    );
}

#[test]
fn the_index_follows_appends_and_rewrites() {
    let mut cp = checkpoint(&["a/x.rs"]);
    let mut index = ContextIndex::default();
    index.sync(&cp);
    let focus = Focus {
        subagent: "sa1".into(),
        scope: vec!["a".into()],
        terms: Vec::new(),
    };
    cp.evidence.push(checkpoint(&["a/y.rs"]).evidence.remove(0));
    index.sync(&cp);
    assert_eq!(
        index
            .select(&cp, &focus, &[Field::Evidence])
            .of(Field::Evidence)
            .unwrap(),
        [0, 1]
    );
    // A plan entry updated in place as its subagent runs is not a rewrite.
    cp.plans.push(crate::checkpoint::PlanEntry {
        subagent: "sa1".into(),
        scope: vec!["a".into()].into(),
        status: crate::checkpoint::PlanStatus::Active,
        outcome: None,
        event: 2,
    });
    index.sync(&cp);
    cp.plans[0].event = 9;
    cp.plans[0].status = crate::checkpoint::PlanStatus::Completed;
    index.sync(&cp);
    assert_eq!(index.rebuilt, 0);
    // A list rewritten in place (a resume drops entries) is indexed again.
    cp.evidence = checkpoint(&["b/z.rs", "a/w.rs"]).evidence;
    index.sync(&cp);
    assert_eq!(index.rebuilt, 1);
    assert_eq!(
        index
            .select(&cp, &focus, &[Field::Evidence])
            .of(Field::Evidence)
            .unwrap(),
        [1]
    );
}

/// Handoffs accepted after one was rejected: the index follows without starting over,
/// picks a subagent's own plan and handoff, and sums the rest.
#[test]
fn handoffs_and_plans_are_picked_by_subagent_and_the_rest_summed() {
    use crate::checkpoint::{AcceptedEntry, PlanEntry, PlanStatus, RejectedEntry};
    let plan = |who: &str, dir: &str| PlanEntry {
        subagent: who.into(),
        scope: vec![dir.into()].into(),
        status: PlanStatus::Active,
        outcome: None,
        event: 1,
    };
    let accepted = |who: &str, event| AcceptedEntry {
        subagent: who.into(),
        repairs: 0,
        conclusions: 1,
        doubted: Vec::new(),
        event,
    };
    let mut cp = checkpoint(&[]);
    cp.plans = vec![plan("sa1", "a"), plan("sa2", "b"), plan("sa3", "c")];
    cp.handoffs.accepted = vec![accepted("sa1", 5)];
    cp.handoffs.rejected = vec![RejectedEntry {
        subagent: "sa3".into(),
        codes: Vec::new(),
        event: 6,
    }];
    let mut index = ContextIndex::default();
    index.sync(&cp);
    cp.handoffs.accepted.push(accepted("sa2", 7));
    index.sync(&cp);
    assert_eq!(index.seen[&List::Accepted].0, 2);
    let focus = Focus {
        subagent: "sa2".into(),
        scope: vec!["b".into()],
        terms: Vec::new(),
    };
    let fields = [Field::Plans, Field::Handoffs];
    let pick = index.select(&cp, &focus, &fields);
    assert_eq!(pick.of(Field::Plans).unwrap(), [1]);
    // Handoffs number the accepted, then the rejected: sa2's accepted entry is 1.
    assert_eq!(pick.of(Field::Handoffs).unwrap(), [1]);
    assert_eq!(pick.omitted.items, 4);
    assert_eq!(
        pick.omitted.sum.hex(),
        independent_sum_of(&[
            ("plans", "sa1"),
            ("plans", "sa3"),
            ("handoffs", "sa1"),
            ("handoffs", "sa3"),
        ])
    );
    // The rejected subagent's own handoff is picked for it.
    let focus = Focus {
        subagent: "sa3".into(),
        scope: vec!["c".into()],
        terms: Vec::new(),
    };
    assert_eq!(
        index
            .select(&cp, &focus, &fields)
            .of(Field::Handoffs)
            .unwrap(),
        [2]
    );
}

/// A role's mandatory fields are compiled whole whatever the selection: the lead's plans
/// and handoffs, all of them, for a focus that picks none.
#[test]
fn mandatory_fields_are_never_cut_by_a_selection() {
    use crate::checkpoint::{AcceptedEntry, PlanEntry, PlanStatus};
    let mut cp = checkpoint(&[]);
    for i in 0..FIELD_CAP + 10 {
        cp.plans.push(PlanEntry {
            subagent: format!("sa{i}"),
            scope: vec![format!("d{i}")].into(),
            status: PlanStatus::Completed,
            outcome: None,
            event: 1,
        });
        cp.handoffs.accepted.push(AcceptedEntry {
            subagent: format!("sa{i}"),
            repairs: 0,
            conclusions: 1,
            doubted: Vec::new(),
            event: 2,
        });
    }
    let mut index = ContextIndex::default();
    index.sync(&cp);
    let roles = crate::context::load_roles(None).unwrap();
    let lead = &roles["lead"];
    let optional: Vec<Field> = lead.optional.iter().map(|o| o.field).collect();
    let focus = Focus {
        subagent: "nobody".into(),
        scope: vec!["elsewhere".into()],
        terms: Vec::new(),
    };
    let pick = index.select(&cp, &focus, &optional);
    let compiled =
        crate::context::compile_selected(&cp, None, lead, 200_000, &crate::tokens::Estimate, &pick)
            .unwrap();
    let listed = |field: Field| {
        compiled
            .manifest
            .iter()
            .filter(|e| e.field == field && e.included && e.item.is_some())
            .count()
    };
    assert_eq!(listed(Field::Plans), FIELD_CAP + 10);
    assert_eq!(listed(Field::Handoffs), FIELD_CAP + 10);
    assert_eq!(pick.omitted.items, 0);
}

/// A checkpoint shorter than the one the index was synced with is no panic: what it does
/// not hold is skipped.
#[test]
fn select_on_a_shorter_checkpoint_skips_what_it_does_not_hold() {
    use crate::checkpoint::{PlanEntry, PlanStatus};
    let mut cp = checkpoint(&["a/x.rs", "a/y.rs"]);
    cp.plans.push(PlanEntry {
        subagent: "sa1".into(),
        scope: vec!["a".into()].into(),
        status: PlanStatus::Active,
        outcome: None,
        event: 1,
    });
    let mut index = ContextIndex::default();
    index.sync(&cp);
    let short = checkpoint(&[]);
    let focus = Focus {
        subagent: "sa1".into(),
        scope: vec!["a".into()],
        terms: Vec::new(),
    };
    let all = [
        Field::Evidence,
        Field::Plans,
        Field::Handoffs,
        Field::Doubts,
    ];
    let pick = index.select(&short, &focus, &all);
    let roles = crate::context::load_roles(None).unwrap();
    let compiled = crate::context::compile_selected(
        &short,
        None,
        &roles["explorer"],
        8_000,
        &crate::tokens::Estimate,
        &pick,
    )
    .unwrap();
    assert!(compiled
        .manifest
        .iter()
        .all(|e| !(e.included && e.item.is_some())));
}

/// A field whose heading does not fit lists its selected items as left out, so the spawn
/// entry counts them.
#[test]
fn a_field_that_does_not_fit_lists_its_items_as_left_out() {
    let cp = checkpoint(&["a/x.rs", "a/y.rs"]);
    let mut index = ContextIndex::default();
    index.sync(&cp);
    let focus = Focus {
        subagent: "sa1".into(),
        scope: vec!["a".into()],
        terms: Vec::new(),
    };
    let roles = crate::context::load_roles(None).unwrap();
    let explorer = &roles["explorer"];
    let optional: Vec<Field> = explorer.optional.iter().map(|o| o.field).collect();
    let pick = index.select(&cp, &focus, &optional);
    // The budget is the floor: no room for any optional heading.
    let floor = match crate::context::compile_selected(
        &cp,
        None,
        explorer,
        1,
        &crate::tokens::Estimate,
        &pick,
    ) {
        Err(refused) => refused.floor,
        Ok(_) => panic!("a 1-token budget cannot hold the mandatory fields"),
    };
    let compiled = crate::context::compile_selected(
        &cp,
        None,
        explorer,
        floor,
        &crate::tokens::Estimate,
        &pick,
    )
    .unwrap();
    let left_out: Vec<&str> = compiled
        .manifest
        .iter()
        .filter(|e| e.field == Field::Evidence && !e.included)
        .filter_map(|e| e.item.as_deref())
        .collect();
    assert_eq!(left_out, ["a/x.rs", "a/y.rs"]);
}
