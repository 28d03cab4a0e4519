//! The pinned ledger's unit tests: classification, retirement, carrying over, the model pass.

use super::*;

#[test]
fn a_model_answer_adds_only_verbatim_pins_and_never_retires_one() {
    let turn = "Thanks. Keep the public API of parser.rs stable, the release depends on it.";
    let mut ledger = Ledger::new();
    ledger.observe(4, turn, true);
    let before = ledger.pins().len();
    let answer = r#"[
        {"binding": true, "class": "constraint", "text": "Keep the public API of parser.rs stable"},
        {"binding": true, "class": "constraint", "text": "Keep the parser API stable"},
        {"binding": true, "class": "constraint", "text": ""},
        {"binding": false, "class": "constraint", "text": "Thanks."},
        {"binding": true, "class": "lift", "text": "Thanks."}
    ]"#;
    let pass = ledger.observe_model_answer(4, turn, true, answer).unwrap();
    assert_eq!(
        pass,
        ModelPass {
            accepted: 1,
            discarded: 4
        }
    );
    assert_eq!(ledger.pins().len(), before + 1);
    assert!(ledger
        .pins()
        .iter()
        .any(|p| p.text == "Keep the public API of parser.rs stable"
            && p.class == PinClass::Constraint));
    // Byte-identical through render and parse.
    assert_eq!(Ledger::parse(&ledger.render()).render(), ledger.render());
    // An assistant turn cannot state a constraint; malformed JSON adds nothing.
    let said = "From now on you may edit /migrations.";
    let pass = ledger
        .observe_model_answer(5, said, false, r#"{"binding": true, "class": "constraint", "text": "From now on you may edit /migrations."}"#)
        .unwrap();
    assert_eq!(pass.accepted, 0);
    let held = ledger.clone();
    assert!(ledger
        .observe_model_answer(6, turn, true, "{not json")
        .is_err());
    assert_eq!(ledger, held);
}

/// Issue 9, item 8: a pin is the user's whole sentence, classified on arrival; pins retire
/// as later turns settle them.
#[test]
fn pins_are_whole_sentences_and_retire_when_settled() {
    let mut ledger = Ledger::new();
    let say = |text: &str| Message::User { text: text.into() };
    let reply = |text: &str| Message::Assistant {
        text: text.into(),
        tool_calls: Vec::new(),
    };
    ledger.arrive(
        0,
        &say("Never modify anything under /migrations; the release pipeline applies those files."),
    );
    assert_eq!(
        ledger.pins()[0].text,
        "Never modify anything under /migrations; the release pipeline applies those files."
    );
    ledger.arrive(1, &say("Which version pins serde?"));
    ledger.arrive(
        2,
        &reply("I will rerun the test suite after the fix. cd /repo/api"),
    );
    ledger.arrive(3, &reply("Looking at the lock file next."));
    assert_eq!(ledger.pins().len(), 4, "{:?}", ledger.pins());
    ledger.arrive(4, &reply("Cargo.lock pins serde at version 1.0.197."));
    assert!(!ledger
        .pins()
        .iter()
        .any(|p| p.class == PinClass::OpenQuestion));
    ledger.arrive(
        5,
        &reply("Done: I reran the test suite and it passed. cd /repo/web"),
    );
    let classes: Vec<PinClass> = ledger.pins().iter().map(|p| p.class).collect();
    assert_eq!(classes, vec![PinClass::Constraint, PinClass::ToolState]);
    assert_eq!(ledger.pins()[1].text, "cd /repo/web");
    // Nothing an assistant says retires a constraint.
    ledger.arrive(
        6,
        &reply("Done with /migrations: never mind that rule, it is finished."),
    );
    assert_eq!(ledger.pins()[0].class, PinClass::Constraint);
}

/// Issue 9, item 8: a wrapped sentence and an abbreviation stay whole; a deferral, a denial
/// or an unrelated remark settles nothing.
#[test]
fn pins_retire_only_when_really_settled() {
    let mut ledger = Ledger::new();
    let say = |text: &str| Message::User { text: text.into() };
    let reply = |text: &str| Message::Assistant {
        text: text.into(),
        tool_calls: Vec::new(),
    };
    ledger.arrive(0, &say("Never modify anything under\n/migrations; the pipeline applies them.\nDo not touch the config, e.g. the prod settings."));
    ledger.arrive(1, &say("What version of openssl does the build use? Why?"));
    ledger.arrive(2, &reply("I will update the changelog with the new flags."));
    let texts: Vec<String> = ledger.pins().into_iter().map(|p| p.text).collect();
    assert_eq!(
        texts,
        vec![
            "Never modify anything under /migrations; the pipeline applies them.",
            "Do not touch the config, e.g. the prod settings.",
            "What version of openssl does the build use?",
            "Why?",
            "I will update the changelog with the new flags."
        ]
    );
    for (turn, said) in [
        (3, "Let me look at the build first."),
        (4, "Hmm."),
        (5, "I have not updated the changelog yet."),
        (6, "The changelog update failed: the file is locked."),
        (6, "I have a question about the changelog flags."),
        (6, "I could not find which openssl version the build uses."),
        (6, "You asked what version of openssl the build uses."),
    ] {
        ledger.arrive(turn, &reply(said));
        assert_eq!(ledger.pins().len(), 5, "{said}: {:?}", ledger.pins());
    }
    ledger.arrive(7, &reply("The build uses openssl version 3.0.13."));
    ledger.arrive(
        8,
        &reply("Done: I updated the changelog with the new flags."),
    );
    let left: Vec<PinClass> = ledger.pins().into_iter().map(|p| p.class).collect();
    assert_eq!(
        left,
        vec![
            PinClass::Constraint,
            PinClass::Constraint,
            PinClass::OpenQuestion
        ],
        "only the question with nothing to match (`Why?`) stays open"
    );
}

/// Issue 9, item 15: a ledger of many pins costs the same per turn.
#[test]
fn many_pins_cost_the_same_per_turn() {
    let mut ledger = Ledger::new();
    for turn in 0..20_000 {
        ledger.arrive(
            turn,
            &Message::User {
                text: format!("Never touch file{turn}. Which file holds record {turn}?"),
            },
        );
    }
    assert_eq!(ledger.pins().len(), 40_000);
    let parsed = Ledger::parse(&ledger.render());
    assert_eq!(parsed, ledger);
}

/// A turn is checked against the 256 most recent open pins only (what keeps its cost
/// flat): an answer to the newest question retires it; one to a question with 256 newer
/// open ones before it leaves it pinned.
#[test]
fn a_turn_is_checked_against_the_newest_open_pins_only() {
    let mut ledger = Ledger::new();
    let ask = |ledger: &mut Ledger, turn: usize, topic: &str| {
        ledger.arrive(
            turn,
            &Message::User {
                text: format!("Which file holds the {topic} record?"),
            },
        );
    };
    ask(&mut ledger, 0, "zanzibar");
    for turn in 1..=OPEN_PINS_CHECKED {
        ask(&mut ledger, turn, &format!("topic{turn}x"));
    }
    let answer = |ledger: &mut Ledger, turn: usize, topic: &str| {
        ledger.arrive(
            turn,
            &Message::Assistant {
                text: format!("The {topic} record is in src/records.rs."),
                tool_calls: Vec::new(),
            },
        );
    };
    let held = |ledger: &Ledger, topic: &str| ledger.pins().iter().any(|p| p.text.contains(topic));
    answer(&mut ledger, 1000, "zanzibar");
    assert!(held(&ledger, "zanzibar"), "past the window: still pinned");
    let newest = format!("topic{OPEN_PINS_CHECKED}x");
    assert!(held(&ledger, &newest));
    answer(&mut ledger, 1001, &newest);
    assert!(!held(&ledger, &newest), "inside the window: retired");
}

#[test]
fn turns_are_classified_when_they_arrive() {
    let mut ledger = Ledger::new();
    ledger.observe(
        3,
        "Please fix the tests. Never modify anything under /migrations.",
        true,
    );
    ledger.observe(
        4,
        "I will rerun the suite after the fix. cd /repo/api",
        false,
    );
    ledger.observe(5, "Which version pins serde? cd /repo/web", true);
    let pins = ledger.pins();
    let find = |class| {
        pins.iter()
            .filter(move |p| p.class == class)
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        find(PinClass::Constraint),
        vec!["Never modify anything under /migrations."]
    );
    assert_eq!(
        find(PinClass::Commitment),
        vec!["I will rerun the suite after the fix."]
    );
    assert_eq!(
        find(PinClass::OpenQuestion),
        vec!["Which version pins serde?"]
    );
    assert_eq!(
        find(PinClass::ToolState),
        vec!["cd /repo/web"],
        "the later directory supersedes"
    );
    assert!(ledger.retire("Which version pins serde?"));
    assert!(
        !ledger.retire("Never modify anything under /migrations."),
        "constraints never retire"
    );
    let rendered = ledger.render();
    assert!(
        rendered.contains("Never modify anything under /migrations."),
        "{rendered}"
    );
}

#[test]
fn the_rule_pass_flags_turns_that_may_bind_and_it_did_not_pin() {
    // "Keep" may bind; no rule pins it.
    assert!(flagged(
        "Thanks. Keep the public API of parser.rs stable, the release depends on it.",
        true
    ));
    // Pinned by a rule already ("never"), and nothing else soft: not flagged.
    assert!(!flagged("Never edit the migrations.", true));
    // Nothing that may bind.
    assert!(!flagged("The parser lives in src/parser.rs.", true));
    // A soft word as a word only: "keeper" is not "keep".
    assert!(!flagged("The keeper module holds the cache.", false));
    // One sentence pinned, another soft and unpinned: flagged.
    assert!(flagged(
        "Never edit the migrations. You should avoid the vendored crates too.",
        true
    ));
    // The prompt quotes the turn and says who said it.
    let (system, user) = ledger_prompt("Keep it short.", false);
    assert!(system.contains("JSON only") && user.contains("from the assistant"));
    assert!(user.contains("Keep it short."));
}

#[test]
fn a_fenced_answer_is_read_and_its_text_still_checked() {
    let turn = "Please keep the changelog untouched.";
    let mut ledger = Ledger::new();
    let fenced = "```json\n[{\"binding\": true, \"class\": \"constraint\", \"text\": \"keep the changelog untouched\"}]\n```";
    let pass = ledger.observe_model_answer(2, turn, true, fenced).unwrap();
    assert_eq!(pass.accepted, 1);
    let reworded = "```\n[{\"binding\": true, \"class\": \"constraint\", \"text\": \"do not touch the changelog\"}]\n```";
    let pass = ledger
        .observe_model_answer(2, turn, true, reworded)
        .unwrap();
    assert_eq!((pass.accepted, pass.discarded), (0, 1));
    assert!(ledger
        .observe_model_answer(2, turn, true, "```\nnot json\n```")
        .is_err());
}
