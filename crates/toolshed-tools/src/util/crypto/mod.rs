//! The `crypto` tool: hashes, HMAC and byte encodings.
//!
//! Everything here works on bytes. Inputs are strings, so `input_encoding` and
//! `key_encoding` say how to turn a string into bytes (UTF-8, hex or base64); that is how a
//! model hashes binary data it only has as hex.

mod codec;
mod spec;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Digest;
use toolshed_core::{Plugin, SyncTool, ToolError, ToolOutput};

use self::codec::Alphabet;
use self::spec::{Algorithm, Args, BytesEncoding, Encoding, Operation};
use super::{required, single_tool_plugin};

/// The largest `input` or `key` accepted, in bytes.
const MAX_INPUT_BYTES: usize = 1024 * 1024;

/// The `system.crypto` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    single_tool_plugin(
        "crypto",
        "Crypto",
        SyncTool::new(spec::spec(), |_, args| run(args)),
    )
}

fn run(args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = crate::args::parse(args)?;
    check_size("input", &args.input)?;
    if let Some(key) = &args.key {
        check_size("key", key)?;
    }
    reject_unused(&args)?;
    match args.operation {
        Operation::Hash => hash(&args),
        Operation::Hmac => hmac(&args),
        Operation::Encode => encode(&args),
        Operation::Decode => decode(&args),
    }
}

fn check_size(field: &str, value: &str) -> Result<(), ToolError> {
    if value.len() > MAX_INPUT_BYTES {
        return Err(ToolError::invalid_at(
            format!("/{field}"),
            format!(
                "`{field}` is {} bytes; the limit is {MAX_INPUT_BYTES} bytes (1 MiB). \
                 Split the data or process a smaller part",
                value.len()
            ),
        ));
    }
    Ok(())
}

/// Refuses fields the operation does not read, so a misplaced argument is not silently
/// ignored (e.g. `algorithm` given to `encode`).
fn reject_unused(args: &Args) -> Result<(), ToolError> {
    let op = args.operation;
    let present = [
        ("algorithm", args.algorithm.is_some()),
        ("input_encoding", args.input_encoding.is_some()),
        ("key", args.key.is_some()),
        ("key_encoding", args.key_encoding.is_some()),
        ("encoding", args.encoding.is_some()),
    ];
    let used: &[&str] = match op {
        Operation::Hash => &["algorithm", "input_encoding"],
        Operation::Hmac => &["algorithm", "input_encoding", "key", "key_encoding"],
        Operation::Encode => &["encoding", "input_encoding"],
        Operation::Decode => &["encoding"],
    };
    for (field, is_present) in present {
        if is_present && !used.contains(&field) {
            let mut fields = vec!["input"];
            fields.extend_from_slice(used);
            return Err(ToolError::invalid_at(
                format!("/{field}"),
                format!(
                    "`{field}` does not apply to operation `{}`; remove it (`{}` reads: {})",
                    op.name(),
                    op.name(),
                    fields.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// The bytes of a string argument in the encoding the caller named.
fn to_bytes(field: &str, value: &str, encoding: BytesEncoding) -> Result<Vec<u8>, ToolError> {
    let decoded = match encoding {
        BytesEncoding::Utf8 => return Ok(value.as_bytes().to_vec()),
        BytesEncoding::Hex => codec::decode_hex(value),
        BytesEncoding::Base64 => codec::decode_base64(value, Alphabet::Either),
    };
    decoded.map_err(|message| {
        let name = match encoding {
            BytesEncoding::Hex => "hex",
            _ => "base64",
        };
        ToolError::invalid_at(
            format!("/{field}"),
            format!(
                "`{field}` is declared as {name} (`{field}_encoding`) but does not decode: \
                 {message}. Fix the value, or set `{field}_encoding` to utf8 for plain text"
            ),
        )
    })
}

fn digest(algorithm: Algorithm, data: &[u8]) -> Vec<u8> {
    match algorithm {
        Algorithm::Md5 => md5::Md5::digest(data).to_vec(),
        Algorithm::Sha1 => sha1::Sha1::digest(data).to_vec(),
        Algorithm::Sha256 => sha2::Sha256::digest(data).to_vec(),
        Algorithm::Sha512 => sha2::Sha512::digest(data).to_vec(),
    }
}

fn mac(algorithm: Algorithm, key: &[u8], data: &[u8]) -> Result<Vec<u8>, ToolError> {
    // HMAC accepts keys of any length; the error arm exists only because the trait is fallible.
    macro_rules! compute {
        ($hash:ty) => {{
            let mut mac = Hmac::<$hash>::new_from_slice(key)
                .map_err(|e| ToolError::Internal(format!("HMAC rejected a key: {e}")))?;
            mac.update(data);
            mac.finalize().into_bytes().to_vec()
        }};
    }
    Ok(match algorithm {
        Algorithm::Md5 => compute!(md5::Md5),
        Algorithm::Sha1 => compute!(sha1::Sha1),
        Algorithm::Sha256 => compute!(sha2::Sha256),
        Algorithm::Sha512 => compute!(sha2::Sha512),
    })
}

fn hash(args: &Args) -> Result<ToolOutput, ToolError> {
    let algorithm = required(args.algorithm, "algorithm", "hash")?;
    let data = to_bytes(
        "input",
        &args.input,
        args.input_encoding.unwrap_or_default(),
    )?;
    let sum = digest(algorithm, &data);
    let hex = codec::encode_hex(&sum);
    Ok(ToolOutput::text_and_structured(
        hex.clone(),
        json!({
            "operation": "hash",
            "algorithm": algorithm.name(),
            "hex": hex,
            "base64": codec::encode_base64(&sum),
            "input_bytes": data.len(),
        }),
    ))
}

fn hmac(args: &Args) -> Result<ToolOutput, ToolError> {
    let key = required(args.key.as_deref(), "key", "hmac")?;
    let key = to_bytes("key", key, args.key_encoding.unwrap_or_default())?;
    let data = to_bytes(
        "input",
        &args.input,
        args.input_encoding.unwrap_or_default(),
    )?;
    let algorithm = args.algorithm.unwrap_or(Algorithm::Sha256);
    let tag = mac(algorithm, &key, &data)?;
    let hex = codec::encode_hex(&tag);
    Ok(ToolOutput::text_and_structured(
        hex.clone(),
        json!({
            "operation": "hmac",
            "algorithm": format!("hmac-{}", algorithm.name()),
            "hex": hex,
            "base64": codec::encode_base64(&tag),
            "input_bytes": data.len(),
        }),
    ))
}

fn encode(args: &Args) -> Result<ToolOutput, ToolError> {
    let encoding = required(args.encoding, "encoding", "encode")?;
    let data = to_bytes(
        "input",
        &args.input,
        args.input_encoding.unwrap_or_default(),
    )?;
    let output = match encoding {
        Encoding::Base64 => codec::encode_base64(&data),
        Encoding::Base64url => codec::encode_base64url(&data),
        Encoding::Hex => codec::encode_hex(&data),
        Encoding::Url => codec::encode_url(&data),
    };
    Ok(ToolOutput::text_and_structured(
        output.clone(),
        json!({
            "operation": "encode",
            "encoding": encoding.name(),
            "output": output,
            "input_bytes": data.len(),
        }),
    ))
}

fn decode(args: &Args) -> Result<ToolOutput, ToolError> {
    let encoding = required(args.encoding, "encoding", "decode")?;
    let decoded = match encoding {
        Encoding::Base64 => codec::decode_base64(&args.input, Alphabet::Standard),
        Encoding::Base64url => codec::decode_base64(&args.input, Alphabet::UrlSafe),
        Encoding::Hex => codec::decode_hex(&args.input),
        Encoding::Url => codec::decode_url(&args.input),
    };
    let bytes = decoded.map_err(|message| {
        ToolError::invalid_at(
            "/input",
            format!("`input` is not valid {}: {message}", encoding.name()),
        )
    })?;
    let len = bytes.len();
    Ok(match String::from_utf8(bytes) {
        Ok(text) => ToolOutput::text_and_structured(
            text.clone(),
            json!({
                "operation": "decode",
                "encoding": encoding.name(),
                "utf8": true,
                "text": text,
                "bytes": len,
            }),
        ),
        Err(e) => {
            let hex = codec::encode_hex(e.as_bytes());
            ToolOutput::text_and_structured(
                format!(
                    "The decoded {len} bytes are not valid UTF-8 text (first bad byte at \
                     offset {}), so here they are as hex:\n{hex}",
                    e.utf8_error().valid_up_to()
                ),
                json!({
                    "operation": "decode",
                    "encoding": encoding.name(),
                    "utf8": false,
                    "hex": hex,
                    "bytes": len,
                }),
            )
        }
    })
}
