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

/// A byte count in binary units, as `--max-memory` reads them: `1.50 GiB`, `365.3 MiB`, `12 KiB`.
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    const K: f64 = 1024.0;
    if b >= K * K * K {
        format!("{:.2} GiB", b / (K * K * K))
    } else if b >= K * K {
        format!("{:.1} MiB", b / (K * K))
    } else {
        format!("{:.0} KiB", b / K)
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
        assert_eq!(human_bytes(3 << 30), "3.00 GiB");
        assert_eq!(human_bytes(383 << 20), "383.0 MiB");
        assert_eq!(human_bytes(12 << 10), "12 KiB");
    }
}
