//! ISO 8601 timestamps as A2A writes them (`2025-10-28T10:30:00.000Z`), to and from Unix
//! milliseconds. Pure arithmetic (Hinnant's civil-date algorithms); no clock is read here.

/// Format Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ` (UTC, millisecond precision, as the
/// spec recommends).
pub fn format_millis(ms: u64) -> String {
    let secs = ms / 1000;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let (hour, minute, second) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Every task status carries one, so digits are written in place rather than through
    // `format!`'s padding machinery (which cost ~1.5 % of a returnImmediately SendMessage).
    let Ok(year @ 0..=9999) = u64::try_from(year) else {
        return format!(
            "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{:03}Z",
            ms % 1000
        );
    };
    let mut text = *b"0000-00-00T00:00:00.000Z";
    for (at, width, value) in [
        (0, 4, year),
        (5, 2, month as u64),
        (8, 2, day as u64),
        (11, 2, hour),
        (14, 2, minute),
        (17, 2, second),
        (20, 3, ms % 1000),
    ] {
        let mut value = value;
        for digit in text[at..at + width].iter_mut().rev() {
            *digit = b'0' + (value % 10) as u8;
            value /= 10;
        }
    }
    // ASCII digits and separators only, so this never falls back (a `char` at a time cost
    // more than the arithmetic).
    String::from_utf8(text.to_vec()).unwrap_or_default()
}

/// Parse an RFC 3339 timestamp (`2025-10-28T10:30:00Z`, with optional fraction and a `Z` or
/// `±HH:MM` offset) into Unix milliseconds. Fractions beyond milliseconds are truncated.
/// Returns `None` for anything else, or for a time before 1970.
pub fn parse_millis(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let num = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(range)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut millis = 0i64;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        for (i, c) in fraction[..digits].bytes().take(3).enumerate() {
            millis += i64::from(c - b'0') * [100, 10, 1][i];
        }
        rest = &fraction[digits..];
    }
    let offset_minutes = match rest {
        "Z" | "z" => 0,
        _ => {
            let ob = rest.as_bytes();
            if ob.len() != 6 || !matches!(ob[0], b'+' | b'-') || ob[3] != b':' {
                return None;
            }
            // RFC 3339's time-numoffset: two digits of hour (00-23), two of minute (00-59).
            let at = s.len() - rest.len();
            let (hours, minutes) = (num(at + 1..at + 3)?, num(at + 4..at + 6)?);
            if hours > 23 || minutes > 59 {
                return None;
            }
            let sign = if ob[0] == b'-' { -1 } else { 1 };
            sign * (hours * 60 + minutes)
        }
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_minutes * 60;
    u64::try_from(secs * 1000 + millis).ok()
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_millis(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(format_millis(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(
            format_millis(253_402_300_799_999),
            "9999-12-31T23:59:59.999Z"
        );
        assert_eq!(
            format_millis(253_402_300_800_000),
            "10000-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn parses_what_clients_send() {
        assert_eq!(
            parse_millis("2023-11-14T22:13:20.123Z"),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            parse_millis("2023-11-14T22:13:20Z"),
            Some(1_700_000_000_000)
        );
        assert_eq!(
            parse_millis("2026-11-30T08:33:02.578676Z"),
            parse_millis("2026-11-30T08:33:02.578Z")
        );
        assert_eq!(
            parse_millis("2023-11-15T00:13:20.123+02:00"),
            Some(1_700_000_000_123)
        );
        assert_eq!(
            parse_millis("2023-11-15T22:12:20.123+23:59"),
            Some(1_700_000_000_123)
        );
        for bad in [
            "",
            "2023-11-14",
            "2023-13-01T00:00:00Z",
            "2023-02-30T00:00:00Z",
            "2023-11-14T22:13:20",
            "x023-11-14T22:13:20Z",
            "2023-11-14T22:13:20.Z",
            // Offsets out of range, or not two digits each.
            "2025-01-01T00:00:00+25:00",
            "2025-01-01T00:00:00+24:00",
            "2025-01-01T00:00:00-00:60",
            "2025-01-01T00:00:00-+5:00",
            "2025-01-01T00:00:00+05:+9",
            "2025-01-01T00:00:00+5:000",
        ] {
            assert_eq!(parse_millis(bad), None, "{bad}");
        }
    }

    #[test]
    fn round_trips_every_day_for_a_century() {
        for day in (0..36_600u64).step_by(7) {
            let ms = day * 86_400_000 + 12_345;
            assert_eq!(parse_millis(&format_millis(ms)), Some(ms));
        }
    }

    /// The days from 1970-01-01 to `year-month-day`, counted year by year and month by
    /// month: independent of the civil-date algorithms under test.
    fn days_since_epoch(year: i64, month: i64, day: i64) -> i64 {
        let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        let leaps_before = |y: i64| (y - 1) / 4 - (y - 1) / 100 + (y - 1) / 400;
        let days_before_year = |y: i64| 365 * (y - 1) + leaps_before(y);
        const BEFORE_MONTH: [i64; 12] = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
        let february = i64::from(month > 2 && leap(year));
        days_before_year(year) - days_before_year(1970)
            + BEFORE_MONTH[(month - 1) as usize]
            + february
            + day
            - 1
    }

    fn month_days(year: i64, month: i64) -> i64 {
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        match month {
            2 => 28 + i64::from(leap),
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        }
    }

    /// A date and time of day as RFC 3339 fields: year, month, day, hour, minute, second
    /// (60: a leap second).
    fn fields() -> impl Strategy<Value = (i64, i64, i64, i64, i64, i64)> {
        (1i64..=9999, 1i64..=12)
            .prop_flat_map(|(y, m)| (Just(y), Just(m), 1..=month_days(y, m)))
            .prop_flat_map(|(y, m, d)| (Just(y), Just(m), Just(d), 0i64..24, 0i64..60, 0i64..=60))
    }

    /// The largest instant written with a four-digit year: 9999-12-31T23:59:59.999Z.
    const LAST_MS: u64 = 253_402_300_799_999;

    proptest! {
        // Bounded so the properties run in the ordinary test pass; no regression files are
        // written into the repository.
        #![proptest_config(ProptestConfig {
            cases: 256,
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        #[test]
        fn format_then_parse_is_the_identity(ms in 0..=LAST_MS) {
            let text = format_millis(ms);
            prop_assert_eq!(text.len(), 24, "{}", text);
            prop_assert_eq!(parse_millis(&text), Some(ms), "{}", text);
        }

        #[test]
        fn any_text_parses_or_is_refused_without_panicking(
            text in prop_oneof![
                any::<String>(),
                "[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{0,12})?([Zz]|[+-][0-9]{2}:[0-9]{2})?",
                "[0-9:+\\-.TZé\u{1F600}]{18,32}",
            ],
        ) {
            if let Some(ms) = parse_millis(&text) {
                // A four-digit year and an offset under a day name no later instant.
                prop_assert!(ms < LAST_MS + 86_400_000, "{} -> {}", text, ms);
                // Written back (a five-digit year past 9999 is not RFC 3339), it reads the same.
                if ms <= LAST_MS {
                    prop_assert_eq!(parse_millis(&format_millis(ms)), Some(ms), "{}", text);
                }
            }
        }

        #[test]
        fn an_offset_in_range_shifts_the_instant_by_itself(
            (year, month, day, hour, minute, second) in fields(),
            fraction in "[0-9]{0,9}",
            offset in prop_oneof![
                Just(None),
                (any::<bool>(), 0i64..24, 0i64..60).prop_map(Some),
            ],
            separator in proptest::sample::select(vec!['T', 't', ' ']),
            zulu in proptest::sample::select(vec!['Z', 'z']),
        ) {
            let mut text = format!(
                "{year:04}-{month:02}-{day:02}{separator}{hour:02}:{minute:02}:{second:02}"
            );
            if !fraction.is_empty() {
                text.push('.');
                text.push_str(&fraction);
            }
            let offset_minutes = match offset {
                None => {
                    text.push(zulu);
                    0
                }
                Some((negative, h, m)) => {
                    let sign = if negative { '-' } else { '+' };
                    text.push_str(&format!("{sign}{h:02}:{m:02}"));
                    (h * 60 + m) * if negative { -1 } else { 1 }
                }
            };
            // Milliseconds are the fraction's first three digits, the rest truncated.
            let millis = format!("{fraction:0<3}")[..3].parse::<i64>().unwrap_or(0);
            let utc_secs = days_since_epoch(year, month, day) * 86_400
                + hour * 3600
                + minute * 60
                + second
                - offset_minutes * 60;
            let want = u64::try_from(utc_secs * 1000 + millis).ok();
            prop_assert_eq!(parse_millis(&text), want, "{}", text);
        }

        #[test]
        fn an_offset_out_of_range_is_refused(
            (year, month, day, hour, minute, second) in fields(),
            negative in any::<bool>(),
            (h, m) in prop_oneof![(24i64..100, 0i64..100), (0i64..100, 60i64..100)],
        ) {
            let sign = if negative { '-' } else { '+' };
            let text = format!(
                "{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{sign}{h:02}:{m:02}"
            );
            prop_assert_eq!(parse_millis(&text), None, "{}", text);
        }
    }
}
