//! The `baton` binary: parses the command line, runs it, maps the outcome to an exit code.
//! Exit codes: 0 done, 1 the run failed, 2 bad usage or input, 130 cancelled (Ctrl-C).

mod cli;

fn main() {
    let code = cli::main();
    std::process::exit(code);
}
