//! Maintenance windows: when `upgrade` may write a tenant's step. A window recurs weekly: it
//! opens on each listed day at `start` in its time zone and stays open for `duration`. The
//! clock is never read here: the shell passes "now" in.

use std::fmt;

use jiff::civil::{Date, Time, Weekday};
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp, ToSpan, Zoned};

/// The longest window: a week (a longer one would never close).
pub const MAX_DURATION: SignedDuration = SignedDuration::from_hours(7 * 24);

/// One recurring window (`maintenanceWindows[]` of a tenant file or a wave).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MaintenanceWindow {
    /// The days it opens on, Monday first.
    pub days: [bool; 7],
    /// Local time it opens at.
    pub start: Time,
    /// How long it stays open (more than zero, at most [`MAX_DURATION`]).
    pub duration: SignedDuration,
    /// The IANA name of its time zone, as written.
    pub time_zone_name: String,
    /// That time zone.
    pub time_zone: TimeZone,
}

/// Whether windows are open at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Opening {
    /// Open; it closes then (the latest close of the windows open now).
    Open {
        /// When the open window closes.
        closes: Timestamp,
    },
    /// Closed; the next window opens then, in its own time zone.
    Closed {
        /// When the next window opens.
        opens: Zoned,
    },
}

impl MaintenanceWindow {
    /// The starts of this window on the local days from eight days before `around` to eight after.
    fn starts(&self, around: &Zoned) -> impl Iterator<Item = Zoned> + '_ {
        let today: Date = around.with_time_zone(self.time_zone.clone()).date();
        // A window opened up to a week ago may still be open; the next one opens within a week.
        (-8i64..=8).filter_map(move |offset| {
            let day = today.checked_add(offset.days()).ok()?;
            if !self.days[day.weekday().to_monday_zero_offset() as usize] {
                return None;
            }
            // A start inside a daylight-saving gap is read with the offset before the gap (so it
            // moves forward by the gap), one in a fold takes the earlier instant: jiff's
            // "compatible" disambiguation, RFC 5545's rule for local times.
            day.to_datetime(self.start).to_zoned(self.time_zone.clone()).ok()
        })
    }
}

/// Whether any of `windows` is open at `now`, and if not, when the next one opens. `None`
/// when there are no windows (always open).
pub fn opening(windows: &[MaintenanceWindow], now: Timestamp) -> Option<Opening> {
    if windows.is_empty() {
        return None;
    }
    let around = now.to_zoned(TimeZone::UTC);
    let mut closes: Option<Timestamp> = None;
    let mut next: Option<Zoned> = None;
    for w in windows {
        for start in w.starts(&around) {
            let begins = start.timestamp();
            let Ok(ends) = begins.checked_add(w.duration) else {
                continue;
            };
            if begins <= now && now < ends {
                closes = Some(closes.map_or(ends, |c| c.max(ends)));
            } else if begins > now && next.as_ref().is_none_or(|n| begins < n.timestamp()) {
                next = Some(start);
            }
        }
    }
    match (closes, next) {
        (Some(closes), _) => Some(Opening::Open { closes }),
        (None, Some(opens)) => Some(Opening::Closed { opens }),
        // Unreachable with at least one day per window; treated as closed for a week.
        (None, None) => Some(Opening::Closed {
            opens: around.checked_add(7.days()).unwrap_or(around),
        }),
    }
}

/// The three-letter names `days` takes, Monday first.
pub const DAY_NAMES: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// The day a name stands for (`mon` .. `sun`, or the full English name, any case).
pub fn weekday(name: &str) -> Option<Weekday> {
    let lower = name.to_ascii_lowercase();
    const FULL: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    let i = DAY_NAMES
        .iter()
        .position(|d| *d == lower)
        .or_else(|| FULL.iter().position(|d| *d == lower))?;
    Some(Weekday::from_monday_zero_offset(i as i8).expect("0..7"))
}

/// How a next opening is shown: `Sat 2026-12-05 02:00 Europe/Berlin (2026-12-05T01:00:00Z)`.
pub struct When<'a>(pub &'a Zoned);

impl fmt::Display for When<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} ({})",
            self.0.strftime("%a %Y-%m-%d %H:%M"),
            self.0.time_zone().iana_name().unwrap_or("UTC"),
            self.0.timestamp()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(days: &[&str], start: &str, hours: i64, tz: &str) -> MaintenanceWindow {
        let mut set = [false; 7];
        for d in days {
            set[weekday(d).unwrap().to_monday_zero_offset() as usize] = true;
        }
        MaintenanceWindow {
            days: set,
            start: start.parse().unwrap(),
            duration: SignedDuration::from_hours(hours),
            time_zone_name: tz.into(),
            time_zone: jiff::tz::TimeZoneDatabase::bundled().get(tz).unwrap(),
        }
    }

    fn at(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_window_is_open_from_its_local_start_for_its_duration() {
        // Saturdays 02:00-06:00 in Berlin (UTC+1 in December): 01:00Z to 05:00Z.
        let w = [window(&["sat"], "02:00", 4, "Europe/Berlin")];
        // Friday 2026-12-04 19:00Z: closed, opens Saturday 01:00Z.
        let Some(Opening::Closed { opens }) = opening(&w, at("2026-12-04T19:00:00Z")) else {
            panic!("closed")
        };
        assert_eq!(opens.timestamp(), at("2026-12-05T01:00:00Z"));
        assert_eq!(
            When(&opens).to_string(),
            "Sat 2026-12-05 02:00 Europe/Berlin (2026-12-05T01:00:00Z)"
        );
        assert_eq!(
            opening(&w, at("2026-12-05T01:00:00Z")),
            Some(Opening::Open {
                closes: at("2026-12-05T05:00:00Z")
            })
        );
        // The end is exclusive: at 05:00Z the next opening is a week later.
        let Some(Opening::Closed { opens }) = opening(&w, at("2026-12-05T05:00:00Z")) else {
            panic!("closed")
        };
        assert_eq!(opens.timestamp(), at("2026-12-12T01:00:00Z"));
        assert_eq!(opening(&[], at("2026-12-05T05:00:00Z")), None);
    }

    #[test]
    fn a_window_that_opened_yesterday_can_still_be_open_and_summer_time_moves_the_instant() {
        // Sundays 22:00 for 8 hours: open on Monday 03:00 local.
        let w = [window(&["sun"], "22:00", 8, "Europe/Berlin")];
        assert!(matches!(
            opening(&w, at("2026-12-07T02:00:00Z")),
            Some(Opening::Open { .. })
        ));
        // In July Berlin is UTC+2: 02:00 local is 00:00Z.
        let w = [window(&["sat", "sun"], "02:00", 1, "Europe/Berlin")];
        let Some(Opening::Closed { opens }) = opening(&w, at("2026-07-03T12:00:00Z")) else {
            panic!("closed")
        };
        assert_eq!(opens.timestamp(), at("2026-07-04T00:00:00Z"));
        // 02:30 on the day summer time starts does not exist: the window opens at 03:30 local.
        let w = [window(&["sun"], "02:30", 1, "Europe/Berlin")];
        let Some(Opening::Closed { opens }) = opening(&w, at("2026-03-28T12:00:00Z")) else {
            panic!("closed")
        };
        assert_eq!(opens.timestamp(), at("2026-03-29T01:30:00Z"));
    }

    #[test]
    fn several_windows_open_at_the_earliest_next_start() {
        let w = [
            window(&["sat"], "02:00", 2, "Europe/Berlin"),
            window(&["mon", "tue", "wed", "thu", "fri"], "15:00", 1, "America/New_York"),
        ];
        // Friday 2026-12-04 19:00Z is 14:00 in New York: its window opens at 15:00 local, 20:00Z,
        // before Berlin's on Saturday at 01:00Z.
        let Some(Opening::Closed { opens }) = opening(&w, at("2026-12-04T19:00:00Z")) else {
            panic!("closed")
        };
        assert_eq!(opens.timestamp(), at("2026-12-04T20:00:00Z"));
        assert_eq!(weekday("Saturday"), Some(Weekday::Saturday));
        assert_eq!(weekday("sa"), None);
    }
}
