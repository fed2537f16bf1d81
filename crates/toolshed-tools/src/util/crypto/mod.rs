//! The `crypto` tool: hashes, HMAC and byte encodings.
//!
//! Everything here works on bytes. Inputs are strings, so `input_encoding` and
//! `key_encoding` say how to turn a string into bytes (UTF-8, hex or base64); that is how a
//! model hashes binary data it only has as hex.

mod codec;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::Digest;
use toolshed_core::{Plugin, SyncTool, ToolAnnotations, ToolError, ToolOutput, ToolSpec};

use self::codec::Alphabet;
use super::{GROUP, parse_args, required, single_tool_plugin};

/// The largest `input` or `key` accepted, in bytes.
const MAX_INPUT_BYTES: usize = 1024 * 1024;

const DESCRIPTION: &str = "Hash, HMAC and encode/decode bytes. Operations:\n\
- `hash`: `algorithm` (md5|sha1|sha256|sha512) and `input`, optional `input_encoding` \
(utf8 default, hex, base64) to hash binary data; returns the hex digest (base64 too in the \
structured result). md5 and sha1 are broken for security: use them only for checksums and \
legacy formats, never for passwords or signatures.\n\
- `hmac`: HMAC-SHA256 of `input` with `key`; optional `key_encoding` and `input_encoding` \
(utf8|hex|base64), optional `algorithm` to use another hash; returns hex and base64.\n\
- `encode` / `decode`: `encoding` (base64|base64url|hex|url) and `input`. base64url encodes \
without padding and decodes with or without it; url percent-encodes one URL component \
(everything but A-Z a-z 0-9 - . _ ~) and decodes only %XX escapes (`+` stays `+`). Decoded \
bytes that are not UTF-8 come back as hex, with a note. `encode` also takes `input_encoding` \
to convert, e.g. hex to base64.\n\
Inputs and keys up to 1 MiB.";

/// The `system.crypto` plugin.
pub fn plugin() -> Arc<dyn Plugin> {
    let spec = ToolSpec::new("crypto", DESCRIPTION)
        .title("Hash, HMAC, base64/hex/url encode and decode")
        .input_schema(input_schema())
        .group(GROUP)
        .annotations(ToolAnnotations::PURE);
    single_tool_plugin("crypto", "Crypto", SyncTool::new(spec, |_, args| run(args)))
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "operation": {
                "type": "string",
                "enum": ["hash", "hmac", "encode", "decode"],
                "description": "What to do: `hash` a value, compute an `hmac`, or `encode` / `decode` it."
            },
            "input": {
                "type": "string",
                "description": "The data to hash, authenticate, encode or decode (up to 1 MiB)."
            },
            "algorithm": {
                "type": "string",
                "enum": ["md5", "sha1", "sha256", "sha512"],
                "description": "Hash function. Required for `hash`; for `hmac` optional, default sha256. md5 and sha1 are not secure."
            },
            "input_encoding": {
                "type": "string",
                "enum": ["utf8", "hex", "base64"],
                "description": "How `input` is turned into bytes for `hash`, `hmac` and `encode`. Default utf8."
            },
            "key": {
                "type": "string",
                "description": "The secret key for `hmac`."
            },
            "key_encoding": {
                "type": "string",
                "enum": ["utf8", "hex", "base64"],
                "description": "How `key` is turned into bytes. Default utf8."
            },
            "encoding": {
                "type": "string",
                "enum": ["base64", "base64url", "hex", "url"],
                "description": "The encoding for `encode` and `decode`."
            }
        },
        "required": ["operation", "input"],
        "additionalProperties": false
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Operation {
    Hash,
    Hmac,
    Encode,
    Decode,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Self::Hash => "hash",
            Self::Hmac => "hmac",
            Self::Encode => "encode",
            Self::Decode => "decode",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Algorithm {
    Md5,
    Sha1,
    Sha256,
    Sha512,
}

impl Algorithm {
    fn name(self) -> &'static str {
        match self {
            Self::Md5 => "md5",
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
            Self::Sha512 => "sha512",
        }
    }
}

/// How a string argument becomes bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum BytesEncoding {
    #[default]
    Utf8,
    Hex,
    Base64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Encoding {
    Base64,
    Base64url,
    Hex,
    Url,
}

impl Encoding {
    fn name(self) -> &'static str {
        match self {
            Self::Base64 => "base64",
            Self::Base64url => "base64url",
            Self::Hex => "hex",
            Self::Url => "url",
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    operation: Operation,
    input: String,
    #[serde(default)]
    algorithm: Option<Algorithm>,
    #[serde(default)]
    input_encoding: Option<BytesEncoding>,
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    key_encoding: Option<BytesEncoding>,
    #[serde(default)]
    encoding: Option<Encoding>,
}

fn run(args: Value) -> Result<ToolOutput, ToolError> {
    let args: Args = parse_args(args)?;
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
