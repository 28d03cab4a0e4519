//! Waves: after each wave of subagents ends, a pure planner reads the updated checkpoint (the
//! settled findings, what each shard searched) and proposes follow-ups — a name an answering
//! finding uses, traced into the shards that never searched for it; in a research run, a term
//! the answers' passages name that no sub-question asked about. The lead plans them as
//! the next wave (a plan revision in the log), until a wave adds no settled conclusion, the
//! budget runs out, the question needs no follow-up, or `--max-waves` is reached.

use std::collections::BTreeSet;

use ractor::ActorRef;
use regex::Regex;

use super::code_lines::{callees_of, calls_by_line, names_in};
use super::plan::Shard;
use super::state::LeadState;
use super::{journal, merge, LeadMsg};
use crate::contracts::RoleId;
use crate::handoff::Conclusion;
use crate::report::Wave;
use crate::source::SourceId;

/// Most follow-ups one wave plans.
pub(crate) const MAX_FOLLOW_UPS: usize = 2;
/// Follow-ups trace names of the first this many answers: what a reader of the report reads.
pub(crate) const FOLLOWED_ANSWERS: usize = 3;

/// One wave as planned: its number and its subagents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WavePlan {
    pub(crate) n: u32,
    pub(crate) ids: Vec<String>,
}

/// A follow-up the planner proposes: the name it traces, the question its subagent answers,
/// where, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FollowUp {
    pub(crate) name: String,
    pub(crate) question: String,
    pub(crate) paths: Vec<String>,
    pub(crate) because: String,
}

/// Follow-ups as the shards of `role` (explorers, researchers) that run them.
pub(crate) fn as_shards(follow: &[FollowUp], role: RoleId) -> Vec<Shard> {
    follow
        .iter()
        .map(|f| Shard {
            paths: f.paths.clone(),
            bytes: 0,
            role: role.clone(),
            question: Some(f.question.clone()),
        })
        .collect()
}

/// What the planner reads of the checkpoint.
pub(crate) struct Checkpointed<'a> {
    /// The answering findings so far, best first, each with the text of the lines it cites.
    pub(crate) answers: &'a [(Conclusion, String)],
    /// Per subagent: the paths it covered and the patterns it searched there.
    pub(crate) searched: Vec<(Vec<String>, Vec<&'a str>)>,
    /// The paths the first wave covered: where follow-ups may look.
    pub(crate) scope: &'a [String],
    /// Follow-up questions planned already.
    pub(crate) asked: &'a [String],
}

/// Whether a question asks how things connect (a path, a call chain, a sequence), so one
/// reader per shard is not enough: a definition question is answered by the first wave.
pub(crate) fn wants_follow_ups(question: &str) -> bool {
    const CONNECTING: &[&str] = &[
        "how",
        "trace",
        "flow",
        "flows",
        "call",
        "calls",
        "called",
        "reach",
        "reaches",
        "through",
        "chain",
        "passes",
        "passed",
        "ties",
        "connect",
        "connects",
        "connected",
        "route",
        "routes",
        "routed",
        "invoke",
        "invokes",
        "invoked",
    ];
    // A name (`set_trace_id`) is one token: its parts ask nothing.
    let words: Vec<String> = question
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    words.iter().any(|w| CONNECTING.contains(&w.as_str()))
}

/// The names the code of `cited` calls, ordered by how near their nearest call is to the line
/// the claim quotes (its longest backticked span): what the evidence itself touches first.
/// Without the quote found there, in the order they are called.
fn callees_nearest_first(cited: &str, claim: &str) -> Vec<String> {
    let calls = calls_by_line(cited);
    let mut names = callees_of(&calls);
    let quote = claim
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::trim)
        .max_by_key(|q| q.len())
        .unwrap_or("");
    let Some(quoted) = (!quote.is_empty())
        .then(|| cited.lines().position(|l| l.contains(quote)))
        .flatten()
    else {
        return names;
    };
    names.sort_by_cached_key(|name| {
        calls
            .iter()
            .filter(|(_, called)| called == name)
            .map(|(n, _)| n.abs_diff(quoted))
            .min()
            .unwrap_or(usize::MAX)
    });
    names
}

/// The follow-ups the checkpoint calls for, in order; none when every name the first three
/// answers use was already searched everywhere the first wave looked.
pub(crate) fn follow_ups(cp: &Checkpointed<'_>) -> Vec<FollowUp> {
    let mut out: Vec<FollowUp> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut compiled: std::collections::HashMap<String, Option<Regex>> = Default::default();
    for (answer, cited) in cp.answers.iter().take(FOLLOWED_ANSWERS) {
        let mut names = names_in(&answer.claim);
        for callee in callees_nearest_first(cited, &answer.claim) {
            if !names.contains(&callee) {
                names.push(callee);
            }
        }
        for name in names {
            if out.len() >= MAX_FOLLOW_UPS {
                return out;
            }
            if !seen.insert(name.to_lowercase()) {
                continue;
            }
            let question = format!("Where is `{name}` defined, and where is it called?");
            if cp.asked.contains(&question) {
                continue;
            }
            let call = format!("{name}(");
            // Where it was searched: the paths of every subagent one of whose patterns finds
            // the name or a call of it (a pattern that matches any line at all, such as `^`, says nothing).
            let mut finds = |pattern: &str| {
                compiled
                    .entry(pattern.to_string())
                    .or_insert_with(|| {
                        regex::RegexBuilder::new(pattern)
                            .case_insensitive(true)
                            .size_limit(1 << 20)
                            .build()
                            .ok()
                            .filter(|re| !re.is_match(""))
                    })
                    .as_ref()
                    .is_some_and(|re| re.is_match(&name) || re.is_match(&call))
            };
            let covered: Vec<&String> = cp
                .searched
                .iter()
                .filter(|(_, patterns)| patterns.iter().any(|p| finds(p)))
                .flat_map(|(paths, _)| paths.iter())
                .collect();
            if covered.iter().any(|p| p.as_str() == ".") {
                continue;
            }
            let paths: Vec<String> = cp
                .scope
                .iter()
                .filter(|p| !covered.contains(p))
                .cloned()
                .collect();
            if paths.is_empty() {
                continue;
            }
            out.push(FollowUp {
                name: name.clone(),
                question,
                because: format!(
                    "`{name}` is named by a finding ({}) and was never searched in {}",
                    cite(answer),
                    crate::source::prose_list(&paths)
                ),
                paths,
            });
        }
    }
    out
}

fn cite(c: &Conclusion) -> String {
    c.sources
        .iter()
        .map(SourceId::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The lines a source cites, keyed by what it cites in: a file's lines, a passage's span of
/// its document (a whole document: every line). Another source (a record, a call) cites none.
fn cited_lines(source: &SourceId) -> Option<((bool, &str), u32, u32)> {
    match source {
        SourceId::Doc { id, span } => {
            let (a, b) = match span.as_deref() {
                None => (1, u32::MAX),
                Some(span) => crate::corpus::parse_span(span)?,
            };
            Some(((true, id.as_str()), a, b))
        }
        _ => source.file_lines().map(|(p, a, b)| ((false, p), a, b)),
    }
}

/// How many of `wave`'s findings cite lines no earlier finding cites: a file's lines or a
/// passage's span overlapping none cited before (a record or a call by its id, as cited).
pub(crate) fn added(earlier: &[&Conclusion], wave: &[&Conclusion]) -> usize {
    // What is known, indexed: claims, each file's and document's cited ranges, other sources.
    let mut claims: BTreeSet<&str> = BTreeSet::new();
    let mut ranges: std::collections::HashMap<(bool, &str), Vec<(u32, u32)>> = Default::default();
    let mut others: BTreeSet<String> = BTreeSet::new();
    let mut n = 0;
    for (i, c) in earlier.iter().chain(wave).enumerate() {
        let seen = claims.contains(c.claim.as_str())
            || c.sources.iter().any(|s| match cited_lines(s) {
                Some((key, a, b)) => ranges
                    .get(&key)
                    .is_some_and(|r| r.iter().any(|(c1, c2)| a <= *c2 && *c1 <= b)),
                None => others.contains(&s.to_string()),
            });
        if i >= earlier.len() && !seen {
            n += 1;
        }
        if i < earlier.len() || !seen {
            claims.insert(c.claim.as_str());
            for s in &c.sources {
                match cited_lines(s) {
                    Some((key, a, b)) => ranges.entry(key).or_default().push((a, b)),
                    None => {
                        others.insert(s.to_string());
                    }
                }
            }
        }
    }
    n
}

impl LeadState {
    /// The wave a subagent belongs to (0: none — a verifier's check).
    pub(super) fn wave_of(&self, id: &str) -> u32 {
        self.fleet.wave_of.get(id).copied().unwrap_or(0)
    }

    /// Records a wave as planned.
    pub(super) fn push_wave(&mut self, wave: WavePlan) {
        for id in &wave.ids {
            self.fleet.wave_of.insert(id.clone(), wave.n);
        }
        self.fleet.waves.push(wave);
    }

    /// The run's answers from the waves' handoffs (a verifier's check left out, so what the
    /// waves decide is the same before and after one), best first, and how many settled
    /// conclusions each wave added: an answer belongs to the earliest wave that found it,
    /// and adds only if it cites lines no earlier wave's answer cites.
    /// `ranked`: the answers already ranked from the same handoffs, when the caller has them.
    fn answers_by_wave(&self, ranked: Option<&[Conclusion]>) -> (Vec<Conclusion>, Vec<usize>) {
        let accepted: Vec<merge::Accepted<'_>> = self
            .accepted_handoffs()
            .into_iter()
            .filter(|a| !a.verifier)
            .collect();
        let answers: Vec<Conclusion> = match ranked {
            Some(answers) => answers.to_vec(),
            None => merge::merge_ranked(
                &accepted,
                &[],
                merge::WHOLE_TREE,
                self.contexts.files.as_ref(),
            )
            .handoff
            .settled_conclusions
            .into_iter()
            .filter(|c| c.kind == crate::handoff::ConclusionKind::Finding)
            .collect(),
        };
        // Each claim's earliest wave, indexed once.
        let mut first_wave: std::collections::HashMap<&str, u32> = Default::default();
        for a in &accepted {
            for f in &a.handoff.settled_conclusions {
                let w = first_wave.entry(f.claim.as_str()).or_insert(a.wave);
                *w = (*w).min(a.wave);
            }
        }
        let found_in = |c: &Conclusion| first_wave.get(c.claim.as_str()).copied().unwrap_or(1);
        let mut earlier: Vec<&Conclusion> = Vec::new();
        let mut added_by = Vec::new();
        for w in &self.fleet.waves {
            let this: Vec<&Conclusion> = answers.iter().filter(|c| found_in(c) == w.n).collect();
            added_by.push(added(&earlier, &this));
            earlier.extend(this);
        }
        (answers, added_by)
    }

    /// What each wave planned and added, the last with why the run planned no more.
    /// `ranked`: the report's answers, when no verifier's handoff went into them (the same
    /// ranking the waves were decided on).
    pub(super) fn wave_summaries(&self, ranked: Option<&[Conclusion]>) -> Vec<Wave> {
        let (_, added_by) = self.answers_by_wave(ranked);
        let mut out: Vec<Wave> = self
            .fleet
            .waves
            .iter()
            .zip(added_by)
            .map(|(w, added)| Wave {
                n: w.n,
                subagents: w.ids.clone(),
                added,
                stopped_because: None,
            })
            .collect();
        if let (Some(last), Some(why)) = (out.last_mut(), &self.fleet.stopped_because) {
            last.stopped_because = Some(why.clone());
        }
        out
    }

    /// Once a wave has ended: plans the next from the checkpoint, or says why there is none
    /// (`fleet.stopped_because`). True when a wave was planned. Decided from the waves alone,
    /// so a resumed run decides as the uninterrupted one did; none is planned once a
    /// verifier's check is. With a lead model, the planner's follow-ups go to it first (off
    /// the actor: `lead.following` is set, and the wave is planned when it answers).
    pub(super) fn next_wave(&mut self, myself: &ActorRef<LeadMsg>) -> bool {
        if self.fleet.stopped_because.is_some() || self.lead.following {
            return false;
        }
        if self.cancelled {
            self.fleet.stopped_because = Some("the run was cancelled".into());
            return false;
        }
        if let Some(why) = self.why_no_wave() {
            self.fleet.stopped_because = Some(why);
            return false;
        }
        let (answers, added_by) = self.answers_by_wave(None);
        let last_added = added_by.last().copied().unwrap_or(0);
        if let (Some(last), 0) = (self.fleet.waves.last(), last_added) {
            if last.n >= 2 {
                self.fleet.stopped_because =
                    Some(format!("wave {} added no settled conclusion", last.n));
                return false;
            }
        }
        let researching = self.researching();
        let follow = if researching {
            self.proposed_research(&answers)
        } else {
            self.proposed(&answers)
        };
        // A verifier is planned only once no wave is: after a resume the same holds.
        let verifying = self
            .fleet
            .records
            .iter()
            .any(|r| r.shard.role == RoleId::VERIFIER);
        if verifying {
            self.fleet.stopped_because =
                Some("a verifier's check was planned: no wave comes after it".into());
            return false;
        }
        if follow.is_empty() {
            self.fleet.stopped_because = Some(if answers.is_empty() {
                "no answer to follow from: the waves settled no finding".into()
            } else if researching {
                "nothing left to follow: the first three answers' passages name no term no question asked about".into()
            } else {
                "nothing left to follow: every name the first three answers use was searched wherever the first wave looked".into()
            });
            return false;
        }
        // The room left (`why_no_wave` said there is some), a verifier's slot kept.
        let reserved = usize::from(self.doubts_any());
        let room = self
            .config
            .max_subagents
            .saturating_sub(self.fleet.wave_of.len() + reserved);
        let follow: Vec<FollowUp> = follow.into_iter().take(room).collect();
        if researching {
            // A research run's follow-ups are the planner's: a lead model plans the waves of
            // an exploration, held to the paths the planner traces.
            self.plan_follow_ups(as_shards(&follow, RoleId::RESEARCHER), last_added, None);
            return true;
        }
        if self.config.lead_model.is_some() {
            self.ask_lead_to_follow(myself, &answers, follow, last_added);
            return false;
        }
        self.plan_follow_ups(as_shards(&follow, RoleId::EXPLORER), last_added, None);
        true
    }

    /// Plans `shards` (explorers, each with its question) as the next wave: a plan revision
    /// in the log, its reason naming the wave, what the wave before it added, the follow-ups
    /// and — `by` — whose plan it is.
    pub(super) fn plan_follow_ups(
        &mut self,
        shards: Vec<Shard>,
        last_added: usize,
        by: Option<&str>,
    ) {
        let n = self.fleet.waves.last().map_or(1, |w| w.n) + 1;
        let first = self.fleet.records.len();
        let new: Vec<(String, Shard)> = shards
            .into_iter()
            .enumerate()
            .map(|(i, shard)| (format!("sa{}", first + i + 1), shard))
            .collect();
        let reason = format!(
            "wave {n}: wave {} added {last_added} settled conclusion(s) as ranked then; {} follow-up(s) planned from the checkpoint{}: {}",
            n - 1,
            new.len(),
            by.map(|b| format!(" ({})", crate::text::one_line(b)))
                .unwrap_or_default(),
            new.iter()
                .map(|(id, s)| format!(
                    "{id} {}",
                    crate::text::one_line(s.question.as_deref().unwrap_or_default())
                ))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let mut listed: Vec<(String, &Shard)> = self
            .fleet
            .records
            .iter()
            .map(|r| (r.summary.id.clone(), &r.shard))
            .collect();
        listed.extend(new.iter().map(|(id, s)| (id.clone(), s)));
        self.log(vec![journal::planned(
            &listed,
            &reason,
            &self.fleet.left_out,
            &self.fleet.not_searched,
        )]);
        self.push_wave(WavePlan {
            n,
            ids: new.iter().map(|(id, _)| id.clone()).collect(),
        });
        self.adopt_plan(new, Default::default());
    }

    /// Why no further wave is planned, if a rule that needs no ranking says so.
    fn why_no_wave(&self) -> Option<String> {
        let last = self.fleet.waves.last()?;
        let explores = self.config.workspace.is_some()
            && self
                .fleet
                .records
                .iter()
                .any(|r| r.shard.role == RoleId::EXPLORER);
        if !explores && !self.researching() {
            return Some(
                "only an exploration of a tree or a research of a corpus plans follow-ups".into(),
            );
        }
        if last.n as usize >= self.config.max_waves {
            return Some(format!("--max-waves {} reached", self.config.max_waves));
        }
        if last.n == 1 && !wants_follow_ups(&self.contexts.search_question) {
            let asks = if self.researching() {
                "what something is"
            } else {
                "where something is"
            };
            return Some(format!(
                "the question asks {asks}, not how things connect: the first wave's answers stand"
            ));
        }
        // A verifier due to re-check doubted findings keeps its slot.
        let planned = self.fleet.wave_of.len() + usize::from(self.doubts_any());
        if planned >= self.config.max_subagents {
            return Some(format!(
                "--max-subagents {} reached",
                self.config.max_subagents
            ));
        }
        if self
            .config
            .cost
            .limit()
            .is_some_and(|l| self.config.cost.spent() >= l)
        {
            return Some("the run's cost limit (--max-cost) was reached".into());
        }
        None
    }

    /// A research run over a corpus (not an exploration, nor a job over an application's
    /// tools), its first wave's subagents researchers.
    fn researching(&self) -> bool {
        self.config.workspace.is_none()
            && self.config.task.corpus.is_some()
            && self
                .fleet
                .records
                .iter()
                .any(|r| r.shard.role == RoleId::RESEARCHER && self.wave_of(&r.summary.id) == 1)
    }

    /// A research run's follow-ups: the terms its answers' passages name that neither the
    /// question nor a sub-question of its waves asked about.
    fn proposed_research(&self, answers: &[Conclusion]) -> Vec<FollowUp> {
        let mut asked: Vec<&str> = vec![self.contexts.search_question.as_str()];
        asked.extend(
            self.fleet
                .records
                .iter()
                .filter_map(|r| r.shard.question.as_deref()),
        );
        super::research_follow::research_follow_ups(answers, &asked)
    }

    /// The planner's follow-ups from the run's checkpoint: the answers so far with the lines
    /// they cite, what each subagent of the waves searched where.
    fn proposed(&self, answers: &[Conclusion]) -> Vec<FollowUp> {
        let files = self.contexts.files.as_ref();
        let answers: Vec<(Conclusion, String)> = answers
            .iter()
            .map(|c| {
                let cited: Vec<String> = c
                    .sources
                    .iter()
                    .filter_map(SourceId::file_lines)
                    .filter_map(|(p, a, b)| {
                        use crate::handoff::Files;
                        files.text(p).ok().map(|t| t.lines(a, b).to_string())
                    })
                    .collect();
                (c.clone(), cited.join("\n"))
            })
            .collect();
        let waves: Vec<&super::parts::SubagentRecord> = self
            .fleet
            .records
            .iter()
            .filter(|r| self.wave_of(&r.summary.id) > 0)
            .collect();
        let searched = waves
            .iter()
            .map(|r| {
                let patterns: Vec<&str> = r.searches.iter().map(|s| s.pattern.as_str()).collect();
                (r.shard.paths.clone(), patterns)
            })
            .collect();
        let first: Vec<String> = waves
            .iter()
            .filter(|r| self.wave_of(&r.summary.id) == 1)
            .flat_map(|r| r.shard.paths.clone())
            .collect();
        let asked: Vec<String> = waves
            .iter()
            .filter_map(|r| r.shard.question.clone())
            .collect();
        follow_ups(&Checkpointed {
            answers: &answers,
            searched,
            scope: &first,
            asked: &asked,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::code_lines::callees_in;
    use super::*;
    use crate::handoff::finding;

    #[test]
    fn a_name_is_followed_only_where_it_was_not_searched() {
        let answers = [(
            finding(
                "`start` calls `flush_pages` at line 4: `flush_pages(x)`",
                "a/run.rs:4",
            ),
            String::new(),
        )];
        let scope = vec!["a".to_string(), "b".to_string()];
        let cp = Checkpointed {
            answers: &answers,
            searched: vec![(
                vec!["a".into()],
                vec!["^", r"flush[_\-\s./:]{0,2}pages|pages[_\-\s./:]{0,2}flush"],
            )],
            scope: &scope,
            asked: &[],
        };
        let f = follow_ups(&cp);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].paths, ["b"]);
        assert!(f[0].question.contains("`flush_pages`"));
        // Searched everywhere: nothing to follow.
        let cp = Checkpointed {
            searched: vec![
                (vec!["a".into()], vec![r"flush[_\-\s./:]{0,2}pages"]),
                (vec!["b".into()], vec![r"\bflush_pages\s*\("]),
            ],
            ..cp
        };
        assert!(follow_ups(&cp).is_empty());
    }

    /// Only the first three answers are followed, and a wave plans at most two follow-ups.
    #[test]
    fn the_first_three_answers_are_followed_two_names_a_wave() {
        let answer = |name: &str| {
            (
                finding(
                    &format!("`go` calls `{name}` at line 1: `{name}(x)`"),
                    "a/run.rs:1",
                ),
                String::new(),
            )
        };
        let scope = vec!["a".to_string()];
        let checkpoint = |answers: &[(Conclusion, String)]| {
            follow_ups(&Checkpointed {
                answers,
                searched: vec![(vec!["a".into()], vec!["^"])],
                scope: &scope,
                asked: &[],
            })
        };
        let asked =
            |f: Vec<FollowUp>| -> Vec<String> { f.into_iter().map(|f| f.question).collect() };
        let four = [
            answer("first_name"),
            answer("second_name"),
            answer("third_name"),
            answer("fourth_name"),
        ];
        let planned = asked(checkpoint(&four));
        assert_eq!(planned.len(), 2);
        assert!(planned[0].contains("`first_name`") && planned[1].contains("`second_name`"));
        let fourth_only = asked(checkpoint(&[
            answer("go"),
            answer("go"),
            answer("go"),
            answer("fourth_name"),
        ]));
        assert!(
            fourth_only.iter().all(|q| !q.contains("fourth_name")),
            "{fourth_only:?}"
        );
        let third = asked(checkpoint(&[
            answer("go"),
            answer("go"),
            answer("third_name"),
        ]));
        assert!(
            third.iter().any(|q| q.contains("`third_name`")),
            "{third:?}"
        );
    }

    #[test]
    fn callees_are_taken_from_the_cited_code_not_its_comments() {
        let cited = "pub fn start() {\n    // see old_path(x)\n    let p = collect_pages(cfg);\n    if ok(p) { flush_pages(&p); }\n}\n";
        assert_eq!(callees_in(cited), ["collect_pages", "flush_pages"]);
        // The call nearest the quoted line is followed first.
        let claim = "In `start`, line 4: `if ok(p) { flush_pages(&p); }`";
        assert_eq!(
            callees_nearest_first(cited, claim),
            ["flush_pages", "collect_pages"]
        );
        // No quote, or a quote not found in the cited text: the order stays.
        for claim in ["start calls things", "line 9: `not_in_the_text(q)`"] {
            assert_eq!(
                callees_nearest_first(cited, claim),
                ["collect_pages", "flush_pages"]
            );
        }
        // The longest span is the quote (not a callee named after it), and a name counts by
        // its nearest call in code, not by a comment or a longer name holding it.
        let cited = "fn a() {\n    // flush_pages(old)\n    unflush_pages(x);\n    collect_pages(y);\n    if ok(p) { flush_pages(&p); }\n}\n";
        let claim =
            "In `a`, line 5: `if ok(p) { flush_pages(&p); }`; it calls `collect_pages` at line 4";
        assert_eq!(
            callees_nearest_first(cited, claim),
            ["flush_pages", "collect_pages", "unflush_pages"]
        );
    }

    #[test]
    fn a_connection_question_wants_follow_ups_and_a_definition_question_does_not() {
        assert!(wants_follow_ups(
            "How does a request get from the router to the handler?"
        ));
        assert!(!wants_follow_ups("Where is the retry delay defined?"));
        assert!(!wants_follow_ups(
            "Where is the path of the retry delay defined, and what does get return?"
        ));
        assert!(wants_follow_ups(
            "What starts the worker, and what does it call each time it wakes up?"
        ));
        assert!(!wants_follow_ups("where is set_trace_id?"));
    }

    #[test]
    fn only_new_lines_count_as_added() {
        let a = finding("a", "src/a.rs:1-10");
        let b = finding("b", "src/a.rs:5-6");
        let c = finding("c", "src/b.rs:1");
        assert_eq!(added(&[&a], &[&b, &c]), 1);
        assert_eq!(added(&[], &[&a, &b]), 1);
    }

    /// A passage counts by its document's lines, as a file's lines do: a new claim on a span
    /// overlapping one cited before adds nothing; a whole document covers every span of it.
    #[test]
    fn a_passage_adds_only_lines_no_earlier_passage_cites() {
        let a = finding("`first`", "doc:guide.md#L3-7");
        let overlapping = finding("`other words`", "doc:guide.md#L6-9");
        let apart = finding("`apart`", "doc:guide.md#L20-24");
        let elsewhere = finding("`elsewhere`", "doc:other.md#L3-7");
        // A file of the same name is not the document.
        let file = finding("`a file`", "guide.md:3-7");
        assert_eq!(added(&[&a], &[&overlapping, &apart, &elsewhere, &file]), 3);
        let whole = finding("`the whole guide`", "doc:guide.md");
        assert_eq!(added(&[&whole], &[&apart, &elsewhere]), 1);
        assert_eq!(added(&[&apart], &[&whole]), 0);
        // A record counts by its id, as cited.
        let order = finding("`paid`", "order:A-1");
        let again = finding("`paid twice`", "order:A-1");
        assert_eq!(added(&[&order], &[&again]), 0);
    }
}
