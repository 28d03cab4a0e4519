//! `baton serve` as a child process on a loopback port, and a small HTTP client for it
//! (reqwest; Server-Sent Events read from the raw stream).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// A `baton serve` child; killed when dropped.
pub(crate) struct Serve {
    pub(crate) child: Child,
    pub(crate) base: String,
    /// Its stderr, a line each, but the listening line.
    pub(crate) log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Serve {
    /// Starts `baton serve --addr 127.0.0.1:0 --state STATE --allow-root ROOT ARGS…` with
    /// `env`, and waits for the line that names its port.
    pub(crate) fn start(state: &Path, root: &Path, args: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut command = Command::new(env!("CARGO_BIN_EXE_baton"));
        command
            .arg("serve")
            .args(["--addr", "127.0.0.1:0", "--state"])
            .arg(state)
            .arg("--allow-root")
            .arg(root)
            .args(args);
        for (k, v) in env {
            command.env(k, v);
        }
        Serve::launch(command)
    }

    /// Starts `baton ARGS…` (a `serve` command line) in `dir` with `env`, on a free loopback
    /// port unless ARGS name an `--addr`.
    pub(crate) fn start_in(
        dir: &Path,
        state: &Path,
        args: &[String],
        env: &[(&str, &str)],
    ) -> Serve {
        let mut command = Command::new(env!("CARGO_BIN_EXE_baton"));
        command
            .current_dir(dir)
            .args(args)
            .arg("--state")
            .arg(state);
        if !args.iter().any(|a| a == "--addr") {
            command.args(["--addr", "127.0.0.1:0"]);
        }
        for (k, v) in env {
            command.env(k, v);
        }
        Serve::launch(command)
    }

    /// Spawns the command (no token or log filter inherited unless it sets them) and waits
    /// for the line naming its address; every other line of stderr is kept in `log`.
    fn launch(mut command: Command) -> Serve {
        for var in ["BATON_TOKEN", "BATON_LOG"] {
            if command.get_envs().all(|(k, _)| k != var) {
                command.env_remove(var);
            }
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("spawn baton serve");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = BufReader::new(stderr).lines();
        let log = Arc::new(Mutex::new(Vec::new()));
        let addr = loop {
            let line = lines
                .next()
                .expect("the listening line from baton serve")
                .expect("stderr readable");
            match line.strip_prefix("baton: listening on ") {
                Some(addr) => break addr.to_string(),
                None => log.lock().unwrap().push(line),
            }
        };
        // The rest of stderr is read so the child never blocks on it.
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Serve {
            child,
            base: addr,
            log,
        }
    }

    /// The URL of `path`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// A client (rustls' provider installed once; no proxy).
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("a client")
}

/// A request's answer: status, headers, body as JSON (Null when it is not JSON).
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: reqwest::header::HeaderMap,
    pub(crate) body: Value,
}

impl Answer {
    /// A header's value.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The problem's code (an error answer).
    pub(crate) fn code(&self) -> &str {
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "an error is a problem document: {}",
            self.body
        );
        self.body["code"].as_str().unwrap_or("")
    }
}

/// A POST of `body` as JSON.
pub(crate) fn post_json(
    client: &reqwest::Client,
    url: &str,
    body: &Value,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
}

/// Sends a request and reads the whole answer.
pub(crate) async fn send(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("the server answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let bytes = response.bytes().await.expect("a body");
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    Answer {
        status,
        headers,
        body,
    }
}

/// One Server-Sent Event.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sse {
    pub(crate) id: Option<u64>,
    pub(crate) event: String,
    pub(crate) data: String,
}

/// An event stream being read.
pub(crate) struct SseReader {
    response: reqwest::Response,
    buffer: String,
    /// Comment lines seen (keep-alives).
    pub(crate) comments: usize,
}

impl SseReader {
    /// Opens the events of `run` (after `last_event_id` when given).
    pub(crate) async fn open(
        client: &reqwest::Client,
        serve: &Serve,
        run: &str,
        last_event_id: Option<u64>,
        token: Option<&str>,
    ) -> SseReader {
        let mut request = client.get(serve.url(&format!("/v1/runs/{run}/events")));
        if let Some(id) = last_event_id {
            request = request.header("Last-Event-ID", id.to_string());
        }
        if let Some(t) = token {
            request = request.bearer_auth(t);
        }
        let response = request.send().await.expect("the stream opens");
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(
            response
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok()),
            Some("text/event-stream")
        );
        SseReader {
            response,
            buffer: String::new(),
            comments: 0,
        }
    }

    /// The next event; None at the end of the stream.
    pub(crate) async fn next(&mut self) -> Option<Sse> {
        loop {
            if let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut sse = Sse {
                    id: None,
                    event: "message".into(),
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if line.starts_with(':') {
                        self.comments += 1;
                    } else if let Some(v) = line.strip_prefix("id: ") {
                        sse.id = v.parse().ok();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        sse.event = v.to_string();
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        sse.data.push_str(v);
                        any = true;
                    }
                }
                if any {
                    return Some(sse);
                }
                continue;
            }
            match tokio::time::timeout(Duration::from_secs(60), self.response.chunk()).await {
                Ok(Ok(Some(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(Ok(None)) => return None,
                Ok(Err(e)) => panic!("the stream broke: {e}"),
                Err(_) => panic!("no event for a minute"),
            }
        }
    }

    /// Every event to the end.
    pub(crate) async fn rest(&mut self) -> Vec<Sse> {
        let mut all = Vec::new();
        while let Some(e) = self.next().await {
            all.push(e);
        }
        all
    }
}

/// Starts an exploration of `root` (as the request names it) and returns its id.
pub(crate) async fn start_explore(
    client: &reqwest::Client,
    serve: &Serve,
    root: &str,
    extra: Value,
) -> String {
    let mut body = serde_json::json!({
        "kind": "explore", "root": root, "question": "where is the retry delay computed?",
    });
    if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            b.insert(k.clone(), v.clone());
        }
    }
    let answer = send(post_json(client, &serve.url("/v1/runs"), &body)).await;
    assert_eq!(answer.status, 202, "{}", answer.body);
    answer.body["run_id"]
        .as_str()
        .expect("a run id")
        .to_string()
}

/// Polls a run until its state is not `running` (a minute at most); its JSON.
pub(crate) async fn settled(client: &reqwest::Client, serve: &Serve, run: &str) -> Value {
    for _ in 0..1200 {
        let answer = send(client.get(serve.url(&format!("/v1/runs/{run}")))).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
        if answer.body["state"] != "running" {
            return answer.body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("run {run} still running after a minute");
}

/// `baton explore --json --state STATE ROOT "where is Cache?"` on the command line: its
/// report (exit 0 asserted).
pub(crate) fn cli_explore(state: &Path, root: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["explore", "--no-progress", "--json", "--state"])
        .arg(state)
        .arg(root)
        .arg("where is Cache?")
        .env_remove("BATON_LOG")
        .output()
        .expect("baton explore");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// `baton runs --json --state STATE`: the rows the command line lists.
pub(crate) fn cli_runs(state: &Path) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_baton"))
        .args(["runs", "--json", "--state"])
        .arg(state)
        .env_remove("BATON_LOG")
        .output()
        .expect("baton runs");
    let listed: Value = serde_json::from_slice(&out.stdout).expect("a JSON listing");
    listed["runs"].as_array().cloned().unwrap_or_default()
}
