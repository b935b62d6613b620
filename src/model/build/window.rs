//! `maintenanceWindows` of a tenant file or a wave -> `model::window::MaintenanceWindow`,
//! collecting every problem at its field.

use std::sync::OnceLock;

use jiff::SignedDuration;
use jiff::civil::Time;
use jiff::tz::TimeZoneDatabase;

use crate::diagnostics::Diagnostic;
use crate::model::window::{DAY_NAMES, MAX_DURATION, MaintenanceWindow, weekday};
use crate::spec::raw;
use crate::spec::source::Source;

/// The IANA time zone database compiled into the binary (jiff's `tzdb-bundle-always`), never
/// the machine's /usr/share/zoneinfo: a window opens at the same instant wherever it is judged.
pub fn time_zones() -> &'static TimeZoneDatabase {
    static DB: OnceLock<TimeZoneDatabase> = OnceLock::new();
    DB.get_or_init(TimeZoneDatabase::bundled)
}

/// The windows at `field` (`spec.maintenanceWindows`), every problem pushed to `errs`.
pub fn windows(
    src: &Source,
    field: &str,
    raw: &[raw::MaintenanceWindow],
    errs: &mut Vec<Diagnostic>,
) -> Vec<MaintenanceWindow> {
    raw.iter()
        .enumerate()
        .filter_map(|(i, w)| window(src, &format!("{field}[{i}]"), w, errs))
        .collect()
}

fn window(
    src: &Source,
    field: &str,
    w: &raw::MaintenanceWindow,
    errs: &mut Vec<Diagnostic>,
) -> Option<MaintenanceWindow> {
    let before = errs.len();
    let mut days = [false; 7];
    match &w.days {
        None => days = [true; 7],
        Some(list) if list.is_empty() => errs.push(
            src.error(&format!("{field}.days"), "a window needs at least one day")
                .with_hint("list days such as `[sat, sun]`, or leave `days` out for every day"),
        ),
        Some(list) => {
            for (j, d) in list.iter().enumerate() {
                match weekday(d) {
                    Some(day) => {
                        let slot = &mut days[day.to_monday_zero_offset() as usize];
                        if *slot {
                            errs.push(
                                src.error(&format!("{field}.days[{j}]"), format!("`{d}` is listed twice"))
                                    .with_hint("list each day once"),
                            );
                        }
                        *slot = true;
                    }
                    None => errs.push(
                        src.error(&format!("{field}.days[{j}]"), format!("`{d}` is not a day of the week"))
                            .with_hint(format!("one of {}", DAY_NAMES.join(", "))),
                    ),
                }
            }
        }
    }
    let start = start(&w.start);
    if start.is_none() {
        errs.push(
            src.error(&format!("{field}.start"), format!("`{}` is not a time of day", w.start))
                .with_hint("write `HH:MM` on a 24-hour clock, from `00:00` to `23:59`, e.g. `start: \"02:00\"`"),
        );
    }
    let duration = duration(&w.duration);
    if duration.is_none() {
        errs.push(
            src.error(
                &format!("{field}.duration"),
                format!("`{}` is not a window length", w.duration),
            )
            .with_hint("hours and minutes, more than zero and at most a week: `4h`, `90m`, `1h30m`, `168h`"),
        );
    }
    let time_zone = match time_zones().get(&w.time_zone) {
        Ok(tz) => Some(tz),
        Err(_) => {
            let hint = match closest_zone(&w.time_zone) {
                Some(near) => format!("an IANA time zone name; did you mean `{near}`?"),
                None => "an IANA time zone name such as `Europe/Berlin`, `America/New_York` or `UTC`".into(),
            };
            errs.push(
                src.error(
                    &format!("{field}.timeZone"),
                    format!("`{}` is not a known time zone", w.time_zone),
                )
                .with_hint(hint),
            );
            None
        }
    };
    if errs.len() != before {
        return None;
    }
    Some(MaintenanceWindow {
        days,
        start: start?,
        duration: duration?,
        time_zone_name: w.time_zone.clone(),
        time_zone: time_zone?,
    })
}

/// `HH:MM`, two digits each.
fn start(text: &str) -> Option<Time> {
    let (h, m) = text.split_once(':')?;
    let two = |s: &str| (s.len() == 2 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<i8>().ok())?;
    Time::new(two(h)?, two(m)?, 0, 0).ok()
}

/// `4h`, `90m`, `1h30m`: whole minutes, more than zero, at most a week. jiff's friendly
/// duration format also reads seconds and fractions; a window is not that precise.
fn duration(text: &str) -> Option<SignedDuration> {
    let valid = !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_digit() || b == b'h' || b == b'm')
        && text.as_bytes()[0].is_ascii_digit();
    let d: SignedDuration = valid.then(|| text.parse().ok())??;
    (d > SignedDuration::ZERO && d <= MAX_DURATION).then_some(d)
}

/// The known zone name nearest to a misspelt one, if one is near.
fn closest_zone(name: &str) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    time_zones()
        .available()
        .map(|n| n.as_str().to_string())
        .map(|n| (strsim::levenshtein(&lower, &n.to_ascii_lowercase()), n))
        .filter(|(d, _)| *d <= 3)
        .min()
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_and_durations_are_read_strictly() {
        assert_eq!(start("02:00"), Some(Time::new(2, 0, 0, 0).unwrap()));
        assert_eq!(start("23:59"), Some(Time::new(23, 59, 0, 0).unwrap()));
        for bad in ["24:00", "2:00", "02:60", "0200", "02:00:00", ""] {
            assert_eq!(start(bad), None, "{bad}");
        }
        assert_eq!(duration("4h"), Some(SignedDuration::from_hours(4)));
        assert_eq!(duration("1h30m"), Some(SignedDuration::from_mins(90)));
        assert_eq!(duration("168h"), Some(MAX_DURATION));
        for bad in ["0h", "169h", "4", "4 hours", "-4h", "PT4H", "30s", ""] {
            assert_eq!(duration(bad), None, "{bad}");
        }
        assert!(time_zones().get("Europe/Berlin").is_ok());
        assert_eq!(closest_zone("Europe/Berln").as_deref(), Some("Europe/Berlin"));
    }
}
