//! Bearer tokens from an auth command, cached for at most 60 s and never in the last 30 s
//! before a JWT's `exp`.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::Mutex;

use crate::config::CommandRunner;
use crate::stream::ProviderError;

/// The longest a command's token is reused.
pub const TOKEN_CACHE_MAX: Duration = Duration::from_secs(60);
/// A JWT is not reused in the last this-much of its life.
pub const EXPIRY_MARGIN: Duration = Duration::from_secs(30);

/// Runs an auth command when its cached token is missing or stale.
#[derive(Debug)]
pub struct TokenCache {
    provider: String,
    argv: Vec<String>,
    timeout: Duration,
    runner: CommandRunner,
    cached: Mutex<Option<(String, Instant)>>,
}

impl TokenCache {
    pub fn new(provider: &str, argv: Vec<String>, timeout: Duration, runner: CommandRunner) -> Self {
        TokenCache { provider: provider.to_string(), argv, timeout, runner, cached: Mutex::new(None) }
    }

    /// A fresh-enough token.
    #[allow(
        clippy::await_holding_invalid_type,
        reason = "single flight: while the command runs, other callers wait for its token instead of running it again"
    )]
    pub async fn token(&self) -> Result<String, ProviderError> {
        let mut cached = self.cached.lock().await;
        if let Some((token, until)) = cached.as_ref()
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let output =
            (self.runner.0)(self.argv.clone(), self.timeout).await.map_err(|message| ProviderError::NotConfigured {
                provider: self.provider.clone(),
                missing: format!("the auth command `{}` failed: {message}", self.argv.join(" ")),
            })?;
        let token = output.trim().to_string();
        if token.is_empty() || token.contains(char::is_whitespace) {
            return Err(ProviderError::NotConfigured {
                provider: self.provider.clone(),
                missing: format!("the auth command `{}` printed no single token", self.argv.join(" ")),
            });
        }
        let mut lifetime = TOKEN_CACHE_MAX;
        if let Some(exp) = jwt_exp(&token) {
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
            let usable_until = exp.saturating_sub(EXPIRY_MARGIN.as_secs());
            lifetime = lifetime.min(Duration::from_secs(usable_until.saturating_sub(now)));
        }
        *cached = Some((token.clone(), Instant::now() + lifetime));
        Ok(token)
    }
}

/// The `exp` claim (seconds since the epoch) of a JWT, if `token` is one.
pub fn jwt_exp(token: &str) -> Option<u64> {
    let mut parts = token.split('.');
    let (_header, payload, _signature) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64url_decode(payload)?;
    let claims: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    claims.get("exp")?.as_f64().filter(|exp| *exp >= 0.0).map(|exp| exp as u64)
}

fn base64url_decode(input: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0;
    for byte in input.bytes() {
        let value = match byte {
            b'A'..=b'Z' => byte - b'A',
            b'a'..=b'z' => byte - b'a' + 26,
            b'0'..=b'9' => byte - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use futures::FutureExt;

    use super::*;

    fn b64(data: &str) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bytes = data.as_bytes();
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn reads_the_exp_of_a_jwt() {
        let token = format!("{}.{}.sig", b64("{\"alg\":\"none\"}"), b64("{\"sub\":\"x\",\"exp\":1700000000}"));
        assert_eq!(jwt_exp(&token), Some(1_700_000_000));
        assert_eq!(jwt_exp("not-a-jwt"), None);
        assert_eq!(jwt_exp("a.!!.c"), None);
    }

    fn counting_runner(token: String) -> (CommandRunner, Arc<AtomicU32>) {
        let calls = Arc::new(AtomicU32::new(0));
        let seen = calls.clone();
        let runner = CommandRunner::new(move |_argv, _timeout| {
            seen.fetch_add(1, Ordering::SeqCst);
            let token = token.clone();
            async move { Ok(format!("{token}\n")) }.boxed()
        });
        (runner, calls)
    }

    #[tokio::test]
    async fn caches_a_plain_token() {
        let (runner, calls) = counting_runner("tok123".into());
        let cache = TokenCache::new("openai", vec!["print-token".into()], Duration::from_secs(1), runner);
        assert_eq!(cache.token().await.unwrap(), "tok123");
        assert_eq!(cache.token().await.unwrap(), "tok123");
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn never_caches_past_a_jwt_exp() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let expired = format!("{}.{}.s", b64("{}"), b64(&format!("{{\"exp\":{}}}", now - 5)));
        let (runner, calls) = counting_runner(expired);
        let cache = TokenCache::new("openai", vec!["t".into()], Duration::from_secs(1), runner);
        cache.token().await.unwrap();
        cache.token().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_jwt_near_its_exp_is_not_reused() {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
        let soon = format!("{}.{}.s", b64("{}"), b64(&format!("{{\"exp\":{}}}", now + 20)));
        let (runner, calls) = counting_runner(soon);
        let cache = TokenCache::new("openai", vec!["t".into()], Duration::from_secs(1), runner);
        cache.token().await.unwrap();
        cache.token().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 2);
        let later = format!("{}.{}.s", b64("{}"), b64(&format!("{{\"exp\":{}}}", now + 3600)));
        let (runner, calls) = counting_runner(later);
        let cache = TokenCache::new("openai", vec!["t".into()], Duration::from_secs(1), runner);
        cache.token().await.unwrap();
        cache.token().await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_failing_command_names_itself() {
        let runner = CommandRunner::new(|_, _| async { Err("exit status 3".to_string()) }.boxed());
        let cache = TokenCache::new("openai", vec!["get-token".into()], Duration::from_secs(1), runner);
        let err = cache.token().await.unwrap_err();
        assert!(err.to_string().contains("get-token") && err.to_string().contains("exit status 3"), "{err}");
    }
}
