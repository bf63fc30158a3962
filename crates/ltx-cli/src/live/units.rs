//! Figures for people, in one system: bytes in decimal units (kB, MB,
//! GB, as disks and file managers count them) and rates in bits per
//! second (as links are sold and as `--rate` is given).

use std::time::Duration;

/// A byte count: `999 B`, `12.3 kB`, `45.6 MB`, `1.23 GB`.
pub fn bytes(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.2} GB", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.1} MB", n as f64 / 1e6),
        n if n >= 1_000 => format!("{:.1} kB", n as f64 / 1e3),
        n => format!("{n} B"),
    }
}

/// A rate given in bytes per second, shown in bits per second:
/// `850 kbit/s`, `45.1 Mbit/s`, `1.25 Gbit/s`.
pub fn bit_rate(bytes_per_second: f64) -> String {
    let bits = bytes_per_second * 8.0;
    if bits >= 1e9 {
        format!("{:.2} Gbit/s", bits / 1e9)
    } else if bits >= 1e6 {
        format!("{:.1} Mbit/s", bits / 1e6)
    } else if bits >= 1e3 {
        format!("{:.0} kbit/s", bits / 1e3)
    } else {
        format!("{bits:.0} bit/s")
    }
}

/// A time left or taken, to the second: `7 s`, `2 min 05 s`, `1 h 04 min`.
pub fn duration(d: Duration) -> String {
    let s = d.as_secs_f64().round() as u64;
    match s {
        s if s >= 3600 => format!("{} h {:02} min", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{} min {:02} s", s / 60, s % 60),
        s => format!("{s} s"),
    }
}

/// `name` in at most `width` characters: whole if it fits, else its end
/// behind `…`, so that the file's own name and extension stay readable.
pub fn fit_name(name: &str, width: usize) -> String {
    let count = name.chars().count();
    if count <= width {
        return name.to_owned();
    }
    let keep = width.saturating_sub(1);
    let tail: String = name.chars().skip(count - keep).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_decimal() {
        assert_eq!(bytes(999), "999 B");
        assert_eq!(bytes(12_345), "12.3 kB");
        assert_eq!(bytes(200 << 20), "209.7 MB");
        assert_eq!(bytes(1_234_000_000), "1.23 GB");
    }

    #[test]
    fn rates_are_in_bits() {
        assert_eq!(bit_rate(6_250_000.0), "50.0 Mbit/s");
        assert_eq!(bit_rate(100_000.0), "800 kbit/s");
        assert_eq!(bit_rate(156_250_000.0), "1.25 Gbit/s");
        assert_eq!(bit_rate(10.0), "80 bit/s");
    }

    #[test]
    fn durations_round_to_the_second() {
        assert_eq!(duration(Duration::from_millis(6_600)), "7 s");
        assert_eq!(duration(Duration::from_secs(125)), "2 min 05 s");
        assert_eq!(duration(Duration::from_secs(3_840)), "1 h 04 min");
    }

    #[test]
    fn long_names_keep_their_end() {
        assert_eq!(fit_name("a.txt", 10), "a.txt");
        assert_eq!(fit_name("photos/2026/IMG_0001.jpg", 13), "…IMG_0001.jpg");
        assert_eq!(fit_name("ééééé", 3).chars().count(), 3);
    }
}
