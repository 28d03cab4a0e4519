//! The `baton` binary: parses the command line, runs it, maps the outcome to an exit code.
//! Exit codes: 0 done, 1 the run failed, 2 bad usage or input, 130 cancelled (Ctrl-C).

mod cli;

fn main() {
    bounded_malloc();
    let code = cli::main();
    std::process::exit(code);
}

/// glibc's allocator raises its mmap threshold each time a large block is freed (up to 32 MiB),
/// after which blocks of that size come from its per-thread arenas and stay there: a run that
/// once serialised a large checkpoint keeps its peak. Fixed at 128 KiB, large blocks go back
/// to the system when freed. The threshold is read from the environment when the process
/// starts, so the binary sets it by running itself again (the same process: `exec`), once.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn bounded_malloc() {
    use std::os::unix::process::CommandExt;
    const THRESHOLD: &str = "MALLOC_MMAP_THRESHOLD_";
    if std::env::var_os(THRESHOLD).is_some() {
        return;
    }
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    // Returns only when the exec failed: then the process goes on as it is.
    let _ = std::process::Command::new(exe)
        .arg0(std::env::args_os().next().unwrap_or_default())
        .args(std::env::args_os().skip(1))
        .env(THRESHOLD, "131072")
        .exec();
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn bounded_malloc() {}
