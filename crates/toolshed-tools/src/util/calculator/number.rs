//! How results are printed: integers without a fraction, everything else with at most 15
//! significant digits, so `0.1 + 0.2` reads `0.3` rather than `0.30000000000000004`.

use serde_json::Value;

/// Integers below this print digit for digit; every integer below it is exact in an f64.
const EXACT_INTEGER_BOUND: f64 = 1e16;

/// Significant digits kept for everything that is not a small integer. 15 is the most an
/// f64 round-trips through decimal for every value, so the printed digits are all real.
const SIGNIFICANT_DIGITS: usize = 15;

/// `value` as short decimal text. The caller guarantees `value` is finite.
pub(super) fn format(value: f64) -> String {
    if value == 0.0 {
        // Also catches -0, which would otherwise print as "-0".
        return "0".to_string();
    }
    if value.fract() == 0.0 && value.abs() < EXACT_INTEGER_BOUND {
        // In range for i64 by the bound above, so the cast is exact.
        return format!("{}", value as i64);
    }
    let scientific = format!("{:.*e}", SIGNIFICANT_DIGITS - 1, value);
    let Some((mantissa, exponent)) = scientific.split_once('e') else {
        return scientific;
    };
    let Ok(exponent) = exponent.parse::<i32>() else {
        return scientific;
    };
    let sign = if value < 0.0 { "-" } else { "" };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0');
    if !(-6..16).contains(&exponent) {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let dot = if rest.is_empty() { "" } else { "." };
        return format!("{sign}{first}{dot}{rest}e{exponent}");
    }
    if exponent < 0 {
        let zeros = "0".repeat(exponent.unsigned_abs() as usize - 1);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = exponent as usize + 1;
    if digits.len() <= int_len {
        let zeros = "0".repeat(int_len - digits.len());
        format!("{sign}{digits}{zeros}")
    } else {
        let (int_part, frac_part) = digits.split_at(int_len);
        format!("{sign}{int_part}.{frac_part}")
    }
}

/// The printed number as JSON: an integer when it is one (and exact), else a float parsed
/// back from the text, so the structured result agrees with what the text shows.
pub(super) fn to_json(text: &str, value: f64) -> Value {
    let shown = text.parse::<f64>().unwrap_or(value);
    if shown.fract() == 0.0 && shown.abs() < EXACT_INTEGER_BOUND {
        return Value::from(shown as i64);
    }
    serde_json::Number::from_f64(shown).map_or(Value::Null, Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_print_without_a_fraction() {
        assert_eq!(format(14.0), "14");
        assert_eq!(format(-3.0), "-3");
        assert_eq!(format(-0.0), "0");
        assert_eq!(format(12_345_678_901_234_567.0), "1.23456789012346e16");
        assert_eq!(format(1e15), "1000000000000000");
        assert_eq!(format(1e16), "1e16");
    }

    #[test]
    fn fractions_keep_fifteen_significant_digits() {
        assert_eq!(format(0.1 + 0.2), "0.3");
        assert_eq!(format(1.0 / 3.0), "0.333333333333333");
        assert_eq!(format(-2.5), "-2.5");
        assert_eq!(format(std::f64::consts::PI), "3.14159265358979");
        assert_eq!(format(0.000_001_5), "0.0000015");
        assert_eq!(format(1.5e-7), "1.5e-7");
        assert_eq!(format(1e-7), "1e-7");
        assert_eq!(format(-1.5e300), "-1.5e300");
        assert_eq!(format(2.999_999_999_999_999_6), "3");
        assert_eq!(format(123_456.789), "123456.789");
    }

    #[test]
    fn json_matches_the_text() {
        assert_eq!(to_json("14", 14.0), serde_json::json!(14));
        assert_eq!(to_json("0.3", 0.1 + 0.2), serde_json::json!(0.3));
        assert_eq!(to_json("1e-7", 1e-7), serde_json::json!(1e-7));
        assert_eq!(to_json("3", 2.999_999_999_999_999_6), serde_json::json!(3));
    }
}
