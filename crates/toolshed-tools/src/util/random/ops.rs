//! The generators behind each operation of the `random` tool.

use rand::Rng;
use rand::distr::{Distribution, Uniform, uniform};
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use serde_json::{Number, Value, json};
use toolshed_core::ToolError;
use uuid::{Builder, Uuid};

use super::{
    Args, MAX_COUNT, MAX_ITEMS, MAX_ITEMS_BYTES, MAX_PASSWORD_CHARS, MAX_PASSWORD_LENGTH,
    MIN_PASSWORD_LENGTH,
};
use crate::util::required;

const LOWERCASE: &str = "abcdefghijklmnopqrstuvwxyz";
const UPPERCASE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const DIGITS: &str = "0123456789";
/// Printable ASCII symbols minus quotes, backslash, backtick and space, which break quoting
/// in shells, JSON and config files.
pub(super) const SYMBOLS: &str = "!#$%&()*+,-./:;<=>?@[]^_{|}~";
const AMBIGUOUS: &str = "0O1lI|";

/// `count`, checked against the cap.
fn count(args: &Args) -> Result<usize, ToolError> {
    let count = args.count;
    if count == 0 || count > MAX_COUNT {
        return Err(ToolError::invalid_at(
            "/count",
            format!("`count` {count} is out of range; ask for 1 to {MAX_COUNT} values per call"),
        ));
    }
    usize::try_from(count).map_err(|_| {
        ToolError::invalid_at(
            "/count",
            format!("`count` {count} is too large; use at most {MAX_COUNT}"),
        )
    })
}

/// A JSON number that must be a whole number fitting in i64.
fn whole(number: &Number, field: &str) -> Result<i64, ToolError> {
    if let Some(n) = number.as_i64() {
        return Ok(n);
    }
    // `5.0` is a whole number too; beyond 2^53 a float no longer says which one.
    if let Some(f) = number.as_f64()
        && f.fract() == 0.0
        && f.abs() <= 9_007_199_254_740_992.0
    {
        return Ok(f as i64);
    }
    Err(ToolError::invalid_at(
        format!("/{field}"),
        format!(
            "`{field}` {number} is not a whole number between {} and {}; operation `integer` needs integers (use `float` for fractions)",
            i64::MIN,
            i64::MAX
        ),
    ))
}

pub(super) fn integers(args: &Args, rng: &mut StdRng) -> Result<Vec<Value>, ToolError> {
    let count = count(args)?;
    let min = whole(&args.min, "min")?;
    let max = args
        .max
        .as_ref()
        .map(|n| whole(n, "max"))
        .transpose()?
        .unwrap_or(100);
    if min > max {
        return Err(ToolError::invalid(format!(
            "`min` {min} is greater than `max` {max}; swap them or widen the range (both ends are inclusive)"
        )));
    }
    // Uniform handles the full i64 range (its span overflows to 0, which it treats as "all").
    let dist = Uniform::new_inclusive(min, max)
        .map_err(|e| ToolError::invalid(format!("cannot draw integers from {min}..={max}: {e}")))?;
    Ok((0..count).map(|_| json!(dist.sample(rng))).collect())
}

pub(super) fn floats(args: &Args, rng: &mut StdRng) -> Result<Vec<Value>, ToolError> {
    let count = count(args)?;
    let min = args.min.as_f64().unwrap_or(0.0);
    let max = args.max.as_ref().and_then(Number::as_f64).unwrap_or(1.0);
    if !min.is_finite() || !max.is_finite() {
        return Err(ToolError::invalid(format!(
            "`min` {min} and `max` {max} must both be finite numbers"
        )));
    }
    if min >= max {
        return Err(ToolError::invalid(format!(
            "`min` {min} must be less than `max` {max} (`max` is exclusive); give a non-empty range such as min 0, max 1"
        )));
    }
    let dist = Uniform::new(min, max).map_err(|e| match e {
        uniform::Error::NonFinite => ToolError::invalid(format!(
            "the range `min` {min} to `max` {max} is wider than a 64-bit float can hold; narrow it (e.g. to ±1e300)"
        )),
        other => ToolError::invalid(format!(
            "cannot draw floats from `min` {min} to `max` {max}: {other}"
        )),
    })?;
    Ok((0..count).map(|_| json!(dist.sample(rng))).collect())
}

pub(super) fn uuids(args: &Args, rng: &mut StdRng) -> Result<Vec<Value>, ToolError> {
    let count = count(args)?;
    match args.version {
        4 => Ok((0..count)
            .map(|_| {
                let mut bytes = [0u8; 16];
                rng.fill_bytes(&mut bytes);
                json!(Builder::from_random_bytes(bytes).into_uuid().to_string())
            })
            .collect()),
        7 if args.seed.is_none() => Ok((0..count)
            .map(|_| json!(Uuid::now_v7().to_string()))
            .collect()),
        7 => {
            let millis = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .map_err(|_| ToolError::failed("the system clock is before 1970"))?;
            let mut ids: Vec<Uuid> = (0..count)
                .map(|_| {
                    let mut bytes = [0u8; 10];
                    rng.fill_bytes(&mut bytes);
                    Builder::from_unix_timestamp_millis(millis, &bytes).into_uuid()
                })
                .collect();
            // A v7 batch should sort in the order it was made; with one timestamp for the
            // whole batch, order by the random bits.
            ids.sort();
            Ok(ids.iter().map(|id| json!(id.to_string())).collect())
        }
        other => Err(ToolError::invalid_at(
            "/version",
            format!("UUID `version` {other} is not supported; use 4 (random) or 7 (time-ordered)"),
        )),
    }
}

pub(super) fn passwords(args: &Args, rng: &mut StdRng) -> Result<Vec<Value>, ToolError> {
    let count = count(args)?;
    let length = args.length;
    if !(MIN_PASSWORD_LENGTH..=MAX_PASSWORD_LENGTH).contains(&length) {
        return Err(ToolError::invalid_at(
            "/length",
            format!(
                "password `length` {length} is out of range; use {MIN_PASSWORD_LENGTH} to {MAX_PASSWORD_LENGTH}"
            ),
        ));
    }
    let total = length.saturating_mul(count as u64);
    if total > MAX_PASSWORD_CHARS {
        return Err(ToolError::invalid(format!(
            "`count` {count} × `length` {length} = {total} characters is over the {MAX_PASSWORD_CHARS}-character limit per call; lower `count` or `length`"
        )));
    }
    let exclude = args.exclude_ambiguous;
    let classes: Vec<Vec<char>> = [
        (args.lowercase, LOWERCASE),
        (args.uppercase, UPPERCASE),
        (args.digits, DIGITS),
        (args.symbols, SYMBOLS),
    ]
    .into_iter()
    .filter(|(enabled, _)| *enabled)
    .map(|(_, set)| {
        set.chars()
            .filter(|c| !(exclude && AMBIGUOUS.contains(*c)))
            .collect()
    })
    .collect();
    if classes.is_empty() {
        return Err(ToolError::invalid(
            "every character class is off; set at least one of `lowercase`, `uppercase`, `digits`, `symbols` to true",
        ));
    }
    let length = usize::try_from(length).unwrap_or(usize::MAX);
    if length < classes.len() {
        return Err(ToolError::invalid_at(
            "/length",
            format!(
                "password `length` {length} cannot hold one character from each of the {} enabled classes; raise `length` or turn classes off",
                classes.len()
            ),
        ));
    }
    let pool: Vec<char> = classes.iter().flatten().copied().collect();
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let mut chars: Vec<char> = Vec::with_capacity(length);
        // One from each class guarantees coverage; the rest come from the whole pool; the
        // shuffle hides which positions were the guaranteed ones.
        for class in &classes {
            chars.extend(class.choose(rng).copied());
        }
        while chars.len() < length {
            chars.extend(pool.choose(rng).copied());
        }
        chars.shuffle(rng);
        out.push(json!(chars.into_iter().collect::<String>()));
    }
    Ok(out)
}

/// `items`, checked against the caps.
fn items<'a>(args: &'a Args, operation: &str) -> Result<&'a [Value], ToolError> {
    let items = required(args.items.as_deref(), "items", operation)?;
    if items.len() > MAX_ITEMS {
        return Err(ToolError::invalid_at(
            "/items",
            format!(
                "`items` has {} entries; the limit is {MAX_ITEMS}",
                items.len()
            ),
        ));
    }
    let bytes = serde_json::to_vec(items).map(|v| v.len()).unwrap_or(0);
    if bytes > MAX_ITEMS_BYTES {
        return Err(ToolError::invalid_at(
            "/items",
            format!("`items` is {bytes} bytes as JSON; the limit is {MAX_ITEMS_BYTES} bytes"),
        ));
    }
    Ok(items)
}

pub(super) fn pick(args: &Args, rng: &mut StdRng) -> Result<Vec<Value>, ToolError> {
    let items = items(args, "pick")?;
    let count = count(args)?;
    if items.is_empty() {
        return Err(ToolError::invalid_at(
            "/items",
            "`items` is empty; give at least one value to pick from",
        ));
    }
    if args.unique {
        if count > items.len() {
            return Err(ToolError::invalid_at(
                "/count",
                format!(
                    "`count` {count} is more than the {} items, and `unique` picks each item at most once; lower `count` or set `unique` to false",
                    items.len()
                ),
            ));
        }
        return Ok(items.sample(rng, count).cloned().collect());
    }
    Ok((0..count)
        .filter_map(|_| items.choose(rng).cloned())
        .collect())
}

pub(super) fn shuffle(args: &Args, rng: &mut StdRng) -> Result<Vec<Value>, ToolError> {
    let mut items = items(args, "shuffle")?.to_vec();
    items.shuffle(rng);
    Ok(items)
}
