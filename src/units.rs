//! Formatting of counts and sizes for people.

/// `1234567` -> `1,234,567`.
pub fn group_digits(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in decimal units: `1.50 GB`, `383.0 MB`, `12 kB`.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_and_sizes() {
        assert_eq!(group_digits(0), "0");
        assert_eq!(group_digits(100), "100");
        assert_eq!(group_digits(1234567), "1,234,567");
        assert_eq!(human_bytes(1_500_000_000), "1.50 GB");
        assert_eq!(human_bytes(383_000_000), "383.0 MB");
    }
}
