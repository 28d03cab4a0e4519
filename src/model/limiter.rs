//! `Limiter`: one client-side rate limit shared by every model call of the process — requests
//! and tokens per minute, two buckets refilled continuously — so a fan-out of a thousand
//! subagents waits its turn instead of storming the provider.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Requests and tokens per minute; cloning shares the buckets.
#[derive(Debug, Clone, Default)]
pub struct Limiter {
    inner: Option<std::sync::Arc<Mutex<Buckets>>>,
}

#[derive(Debug)]
struct Buckets {
    requests: Bucket,
    tokens: Bucket,
    at: Instant,
}

#[derive(Debug)]
struct Bucket {
    /// Per minute; 0 is no limit.
    per_minute: f64,
    level: f64,
}

impl Bucket {
    fn new(per_minute: u64) -> Bucket {
        Bucket {
            per_minute: per_minute as f64,
            level: per_minute as f64,
        }
    }

    fn refill(&mut self, elapsed: Duration) {
        if self.per_minute > 0.0 {
            self.level =
                (self.level + elapsed.as_secs_f64() * self.per_minute / 60.0).min(self.per_minute);
        }
    }

    /// How long until `want` is in the bucket (none: now).
    fn wait_for(&self, want: f64) -> Option<Duration> {
        if self.per_minute <= 0.0 {
            return None;
        }
        let want = want.min(self.per_minute);
        (self.level < want)
            .then(|| Duration::from_secs_f64((want - self.level) * 60.0 / self.per_minute))
    }

    fn take(&mut self, want: f64) {
        if self.per_minute > 0.0 {
            self.level -= want.min(self.per_minute);
        }
    }
}

impl Limiter {
    /// No limit.
    pub fn none() -> Limiter {
        Limiter::default()
    }

    /// At most `requests` requests and `tokens` tokens a minute (0: that one is not limited).
    pub fn per_minute(requests: u64, tokens: u64) -> Limiter {
        if requests == 0 && tokens == 0 {
            return Limiter::none();
        }
        Limiter {
            inner: Some(std::sync::Arc::new(Mutex::new(Buckets {
                requests: Bucket::new(requests),
                tokens: Bucket::new(tokens),
                at: Instant::now(),
            }))),
        }
    }

    /// How long a request of `tokens` must wait, taking its share when it need not.
    fn try_take(&self, tokens: u64) -> Option<Duration> {
        let inner = self.inner.as_ref()?;
        let mut b = inner.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let elapsed = now.duration_since(b.at);
        b.at = now;
        b.requests.refill(elapsed);
        b.tokens.refill(elapsed);
        let wait = [b.requests.wait_for(1.0), b.tokens.wait_for(tokens as f64)]
            .into_iter()
            .flatten()
            .max();
        if wait.is_none() {
            b.requests.take(1.0);
            b.tokens.take(tokens as f64);
        }
        wait
    }

    /// Waits until one request of about `tokens` tokens may go out, and takes its share.
    pub async fn acquire(&self, tokens: u64) {
        while let Some(wait) = self.try_take(tokens) {
            tracing::debug!(wait_ms = wait.as_millis() as u64, "rate limiter: waiting");
            tokio::time::sleep(wait.max(Duration::from_millis(1))).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_bucket_makes_the_next_request_wait() {
        let limiter = Limiter::per_minute(2, 0);
        assert_eq!(limiter.try_take(10), None);
        assert_eq!(limiter.try_take(10), None);
        let wait = limiter
            .try_take(10)
            .expect("the third request of the minute waits");
        assert!(wait > Duration::from_secs(25) && wait <= Duration::from_secs(30));
        // Tokens too, and a request over the whole minute's tokens waits for a full bucket
        // rather than forever.
        let tokens = Limiter::per_minute(0, 1000);
        assert_eq!(tokens.try_take(5000), None);
        assert!(tokens.try_take(10).is_some());
        assert_eq!(Limiter::none().try_take(u64::MAX), None);
    }

    #[tokio::test]
    async fn clones_share_one_limit() {
        let a = Limiter::per_minute(600, 0);
        let b = a.clone();
        let start = Instant::now();
        for _ in 0..600 {
            a.acquire(1).await;
        }
        assert!(start.elapsed() < Duration::from_millis(90));
        // The bucket is empty for both: one more waits about a tenth of a second.
        b.acquire(1).await;
        assert!(start.elapsed() >= Duration::from_millis(90));
    }
}
