//! `browser_screenshot`: a PNG of the viewport, an element or the full page, taken again at a
//! smaller scale while it is over the size cap.

use std::time::Duration;

use base64::Engine as _;
use serde_json::{Value, json};
use toolshed_core::{CallContext, Content, ToolError, ToolOutput};

use super::page::{QUICK, budget, location};
use super::spec;
use super::{Session, Shared};

/// The tallest full-page screenshot, in CSS pixels.
const MAX_FULL_HEIGHT: f64 = 16_384.0;

/// `browser_screenshot`: a PNG, taken again at a smaller scale while it is over the cap.
pub(super) async fn screenshot(
    shared: &Shared,
    ctx: &CallContext,
    session: &Session,
    args: spec::ScreenshotArgs,
) -> Result<ToolOutput, ToolError> {
    let metrics = session
        .call("Page.getLayoutMetrics", json!({}), QUICK)
        .await?;
    let (width, height) = if args.full_page {
        let size = &metrics["cssContentSize"];
        (
            size["width"].as_f64().unwrap_or(0.0),
            size["height"].as_f64().unwrap_or(0.0).min(MAX_FULL_HEIGHT),
        )
    } else {
        let view = &metrics["cssLayoutViewport"];
        (
            view["clientWidth"].as_f64().unwrap_or(0.0),
            view["clientHeight"].as_f64().unwrap_or(0.0),
        )
    };
    if width < 1.0 || height < 1.0 {
        return Err(ToolError::failed(
            "the page has nothing to show (zero size)",
        ));
    }
    let max = shared.settings.max_screenshot_bytes;
    for scale in [1.0, 0.5, 0.25, 0.125] {
        let mut params = json!({
            "format": "png",
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": scale},
        });
        if args.full_page {
            params["captureBeyondViewport"] = Value::Bool(true);
        }
        let shot = session
            .call(
                "Page.captureScreenshot",
                params,
                budget(ctx, Duration::from_secs(60)),
            )
            .await?;
        let data = shot["data"].as_str().unwrap_or_default().to_string();
        let bytes = base64_len(&data);
        if bytes as u64 > max {
            continue;
        }
        let (w, h) = png_size(&data).unwrap_or_default();
        let (url, _) = location(session).await?;
        let scaled = if scale < 1.0 {
            format!(
                ", scaled to {}% to stay under {max} bytes",
                (scale * 100.0) as u32
            )
        } else {
            String::new()
        };
        let what = if args.full_page {
            "full page"
        } else {
            "viewport"
        };
        return Ok(ToolOutput {
            content: vec![
                Content::Text {
                    text: format!(
                        "Screenshot ({what}) of {url}: {w}×{h} px PNG, {bytes} bytes{scaled}"
                    ),
                },
                Content::Image {
                    data,
                    mime_type: "image/png".into(),
                },
            ],
            structured: None,
            is_error: false,
        });
    }
    Err(ToolError::failed(format!(
        "the screenshot is larger than `[browser] max_screenshot_bytes` = {max} even at 1/8 scale; take the viewport instead of the full page"
    )))
}

/// The decoded length of base64 `data`.
fn base64_len(data: &str) -> usize {
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

/// Width and height from a base64 PNG's header.
pub(super) fn png_size(data: &str) -> Option<(u32, u32)> {
    let head = base64::engine::general_purpose::STANDARD
        .decode(data.get(..32)?)
        .ok()?;
    if head.get(..8)? != b"\x89PNG\r\n\x1a\n" || head.get(12..16)? != b"IHDR" {
        return None;
    }
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    Some((be(head.get(16..20)?), be(head.get(20..24)?)))
}
