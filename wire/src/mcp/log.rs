//! Log messages (`notifications/message`): their levels and how a tool's worker records one.
//!
//! A tool logs with a `working` status whose message has a data part of media type
//! [`LOG_MEDIA_TYPE`](super::call::LOG_MEDIA_TYPE) holding a [`LogMessage`]; the bridge
//! forwards it on a sync call's event stream when the client asked for the level:
//!
//! - modern era (2026-07-28): per request, `_meta["io.modelcontextprotocol/logLevel"]`
//!   ([`LoggingLevel::of_meta`]); a request without it gets no log message (the spec's MUST
//!   NOT; it replaced `logging/setLevel`);
//! - legacy era: `logging/setLevel` is a session's setting, and a stateless bridge has no
//!   session to keep it in, so every level is sent (the spec lets a server choose what to
//!   send when no level was set).

use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::META_LOG_LEVEL;

/// A log message's severity (RFC 5424's, as MCP names them), least severe first: a client
/// asking for a level gets that level and every more severe one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoggingLevel {
    /// Debugging detail.
    Debug,
    /// Informational.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken at once.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LoggingLevel {
    /// Every level, least severe first.
    pub const ALL: [LoggingLevel; 8] = [
        LoggingLevel::Debug,
        LoggingLevel::Info,
        LoggingLevel::Notice,
        LoggingLevel::Warning,
        LoggingLevel::Error,
        LoggingLevel::Critical,
        LoggingLevel::Alert,
        LoggingLevel::Emergency,
    ];

    /// The level's name on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            LoggingLevel::Debug => "debug",
            LoggingLevel::Info => "info",
            LoggingLevel::Notice => "notice",
            LoggingLevel::Warning => "warning",
            LoggingLevel::Error => "error",
            LoggingLevel::Critical => "critical",
            LoggingLevel::Alert => "alert",
            LoggingLevel::Emergency => "emergency",
        }
    }

    /// The level a modern request asked log messages at (`_meta["io.modelcontextprotocol/
    /// logLevel"]`): `None` when it asked none. A value that is no level is an error message
    /// for -32602.
    pub fn of_meta(meta: Option<&Map<String, Value>>) -> Result<Option<Self>, String> {
        match meta.and_then(|m| m.get(META_LOG_LEVEL)) {
            None => Ok(None),
            Some(Value::String(level)) => level.parse().map(Some),
            Some(other) => Err(format!(
                "_meta[\"{META_LOG_LEVEL}\"] must be a logging level, not {other}"
            )),
        }
    }
}

impl FromStr for LoggingLevel {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|level| level.as_str() == name)
            .ok_or_else(|| {
                format!(
                    "{name:?} is not a logging level (debug, info, notice, warning, error, critical, alert, emergency)"
                )
            })
    }
}

impl std::fmt::Display for LoggingLevel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One log message: the params of `notifications/message`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogMessage {
    /// How severe.
    pub level: LoggingLevel,
    /// The logger that issued it, if named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logger: Option<String>,
    /// What is logged: any JSON (a string, an object).
    pub data: Value,
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn levels_order_by_severity_and_round_trip_by_name() {
        assert!(LoggingLevel::Debug < LoggingLevel::Info);
        assert!(LoggingLevel::Alert < LoggingLevel::Emergency);
        let mut sorted = LoggingLevel::ALL;
        sorted.sort();
        assert_eq!(sorted, LoggingLevel::ALL);
        for level in LoggingLevel::ALL {
            assert_eq!(level.as_str().parse::<LoggingLevel>().unwrap(), level);
            assert_eq!(serde_json::to_value(level).unwrap(), json!(level.as_str()));
            assert_eq!(
                serde_json::from_value::<LoggingLevel>(json!(level.as_str())).unwrap(),
                level
            );
        }
        assert!("Info".parse::<LoggingLevel>().is_err());
        assert!("warn".parse::<LoggingLevel>().is_err());
    }

    #[test]
    fn a_request_asks_a_level_in_its_meta() {
        let meta = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(LoggingLevel::of_meta(None).unwrap(), None);
        assert_eq!(LoggingLevel::of_meta(Some(&meta(json!({})))).unwrap(), None);
        assert_eq!(
            LoggingLevel::of_meta(Some(&meta(json!({META_LOG_LEVEL: "warning"})))).unwrap(),
            Some(LoggingLevel::Warning)
        );
        for bad in [json!("loud"), json!(3), json!(null)] {
            assert!(LoggingLevel::of_meta(Some(&meta(json!({META_LOG_LEVEL: bad})))).is_err());
        }
    }

    #[test]
    fn a_log_message_has_the_notification_params_shape() {
        let message = LogMessage {
            level: LoggingLevel::Info,
            logger: None,
            data: json!({"step": 1}),
        };
        assert_eq!(
            serde_json::to_value(&message).unwrap(),
            json!({"level": "info", "data": {"step": 1}})
        );
        let named: LogMessage =
            serde_json::from_value(json!({"level": "error", "logger": "db", "data": "down"}))
                .unwrap();
        assert_eq!(named.logger.as_deref(), Some("db"));
        assert!(serde_json::from_value::<LogMessage>(json!({"data": "no level"})).is_err());
    }
}
