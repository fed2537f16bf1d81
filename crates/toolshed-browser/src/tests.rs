//! Unit tests of the browser plugin's pure parts; the plugin against a real Chromium is
//! tested through the MCP door (tests/mcp/test_browser.py).

use super::screenshot::png_size;

#[test]
fn a_png_header_gives_its_size() {
    use base64::Engine as _;
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(780u32.to_be_bytes());
    png.extend(493u32.to_be_bytes());
    png.extend([8, 6, 0, 0, 0]);
    let data = base64::engine::general_purpose::STANDARD.encode(&png);
    assert_eq!(png_size(&data), Some((780, 493)));
    let jpeg =
        base64::engine::general_purpose::STANDARD.encode(b"\xff\xd8\xff\xe0 not a png at all, no");
    assert_eq!(png_size(&jpeg), None);
    assert_eq!(png_size("short"), None);
}
