//! How long a finished task stays answerable, and the one duration syntax every flag and URL
//! option of agentlog takes.
//!
//! A task's retention is written into its command record when it is created (the log says how
//! long each task is kept, so every replica and every restart expires it at the same moment;
//! see `wire/README.md`, fold rule 14). A process's retention setting is what the tasks *it*
//! creates get; tasks already on the log keep theirs.

use std::time::Duration;

/// The retention of finished tasks unless configured: 7 days.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

/// A duration: `<N>ms`, `<N>s`, `<N>m`, `<N>h` or `<N>d` (`500ms`, `10s`, `2m`, `12h`, `7d`),
/// or `0` (no time at all; for a retention: keep forever).
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let value = value.trim();
    let bad = || format!("{value:?} is not a duration such as 500ms, 10s, 2m, 12h or 7d");
    let (number, unit) = value
        .find(|c: char| !c.is_ascii_digit())
        .map_or((value, ""), |at| value.split_at(at));
    let n: u64 = number.parse().map_err(|_| bad())?;
    let seconds = |per: u64| Duration::from_secs(n.saturating_mul(per));
    match unit {
        "" if n == 0 => Ok(Duration::ZERO),
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(seconds(1)),
        "m" => Ok(seconds(60)),
        "h" => Ok(seconds(60 * 60)),
        "d" => Ok(seconds(24 * 60 * 60)),
        _ => Err(bad()),
    }
}

/// A duration in whole milliseconds, as records carry it (for a retention, 0 = keep forever).
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The wall clock in Unix milliseconds: what record timestamps, leases and expiry are judged
/// by.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_duration("7d"), Ok(DEFAULT_RETENTION));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "10", "s", "1w", "-1s", "1.5s", "1 d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
