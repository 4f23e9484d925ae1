//! MCP logging: `logging/setLevel` chooses which of the server's own log lines also go to
//! the client as `notifications/message`. Every line goes to `tracing` (stderr) as well.
//!
//! MCP logging is deprecated from protocol 2026-07-28 on (SEP-2577); the versions this server
//! negotiates all have it.
#![allow(deprecated)]

use std::sync::Mutex;

use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam, RequestId};
use rmcp::service::{OriginatingRequestId, Peer, RoleServer};
use serde_json::Value;
use superpi_client::sync::lock;

/// Severity order of MCP levels (RFC 5424 order, least severe first).
pub fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Whether a line at `level` goes to the client when the client asked for `min`. Before any
/// `setLevel` nothing is sent.
pub fn enabled(min: Option<LoggingLevel>, level: LoggingLevel) -> bool {
    min.is_some_and(|min| rank(level) >= rank(min))
}

/// Per connection: the level the client chose.
#[derive(Default)]
pub struct McpLog {
    level: Mutex<Option<LoggingLevel>>,
}

impl McpLog {
    pub fn set_level(&self, level: LoggingLevel) {
        *lock(&self.level) = Some(level);
    }

    pub fn level(&self) -> Option<LoggingLevel> {
        *lock(&self.level)
    }

    /// Logs one line: to tracing always, to the client when its level asks for it, through
    /// the peer of the request the line is about. The notification carries that request's id
    /// (rmcp's `OriginatingRequestId`, never on the wire), so the gateway's Streamable HTTP
    /// endpoint can send it on that request's own SSE stream.
    pub async fn log(
        &self,
        peer: &Peer<RoleServer>,
        request: &RequestId,
        level: LoggingLevel,
        message: &str,
        data: Value,
    ) {
        match rank(level) {
            0 => tracing::debug!(%data, "{message}"),
            1 | 2 => tracing::info!(%data, "{message}"),
            3 => tracing::warn!(%data, "{message}"),
            _ => tracing::error!(%data, "{message}"),
        }
        if !enabled(self.level(), level) {
            return;
        }
        let mut payload = serde_json::Map::new();
        payload.insert("message".into(), Value::String(message.to_string()));
        if !data.is_null() {
            payload.insert("data".into(), data);
        }
        let param = LoggingMessageNotificationParam::new(level, Value::Object(payload)).with_logger("superpi");
        let mut note = LoggingMessageNotification::new(param);
        note.extensions.insert(OriginatingRequestId(request.clone()));
        if let Err(err) = peer.send_notification(note.into()).await {
            tracing::debug!("could not send a log notification: {err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_sent_before_set_level_and_then_by_severity() {
        assert!(!enabled(None, LoggingLevel::Emergency));
        assert!(enabled(Some(LoggingLevel::Warning), LoggingLevel::Error));
        assert!(enabled(Some(LoggingLevel::Warning), LoggingLevel::Warning));
        assert!(!enabled(Some(LoggingLevel::Warning), LoggingLevel::Info));
        assert!(enabled(Some(LoggingLevel::Debug), LoggingLevel::Debug));
        let all = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        let ranks: Vec<u8> = all.iter().map(|l| rank(*l)).collect();
        assert_eq!(ranks, vec![0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn set_level_is_remembered() {
        let log = McpLog::default();
        assert_eq!(log.level(), None);
        log.set_level(LoggingLevel::Notice);
        assert_eq!(log.level(), Some(LoggingLevel::Notice));
    }
}
