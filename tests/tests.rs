//! baton's integration tests: one binary, a module per area, fixtures built in temp dirs.

mod providers;
mod providers_e2e;
mod support;

mod approvals;
mod architecture;
mod budgets;
mod citations;
mod cli;
mod compaction;
mod constraints;
mod context;
mod contract;
mod coverage;
mod damage;
mod durable;
mod examples;
mod explore;
mod fanout;
mod injection;
mod library;
mod policy;
mod policy_resume;
mod properties;
mod readme;
mod reliability;
mod repair;
mod research;
mod research_offline;
mod sandbox;
mod secrets;
mod server;
mod supervision;
mod trace;
mod window;
mod wire;
