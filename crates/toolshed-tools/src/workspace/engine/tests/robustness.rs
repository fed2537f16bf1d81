//! Nothing panics on arbitrary input: generated patch-like and edit inputs.

use crate::workspace::engine::{diff, edit, patch};

/// A small deterministic generator (xorshift), so a failure reproduces.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        let k = (self.next() % items.len() as u64) as usize;
        items.get(k).copied().unwrap_or("")
    }

    fn text(&mut self, pieces: &[&str], max: u64) -> String {
        let n = self.next() % max;
        (0..n).map(|_| self.pick(pieces)).collect()
    }
}

const PATCH_PIECES: &[&str] = &[
    "*** Begin Patch\n",
    "*** End Patch\n",
    "*** Add File: f\n",
    "*** Update File: f\n",
    "*** Delete File: g\n",
    "*** Move to: h\n",
    "*** End of File\n",
    "@@\n",
    "@@ a\n",
    "@@ -1,2 +1,3 @@\n",
    "@@ -0,0 +1 @@\n",
    "@@ -99999999999999999999 +1 @@\n",
    "--- a/f\n",
    "+++ b/f\n",
    "--- /dev/null\n",
    "+++ /dev/null\n",
    "diff --git a/f b/f\n",
    "rename from f\n",
    "rename to h\n",
    "new file mode 100644\n",
    "\\ No newline at end of file\n",
    " a\n",
    "-a\n",
    "+b\n",
    "\n",
    " \n",
    "-\n",
    "+\n",
    "\r\n",
    "a",
    "\u{2014}",
    "\"",
    "\t",
];
const TEXT_PIECES: &[&str] = &[
    "a", "b", " ", "\t", "\n", "\r\n", "\r", "é", "\u{2019}", "x\n",
];

#[test]
fn generated_patches_never_panic() {
    let mut g = Gen(0x9E37_79B9_7F4A_7C15);
    for _ in 0..3000 {
        let text = g.text(PATCH_PIECES, 24);
        let file = g.text(TEXT_PIECES, 16);
        if let Ok(parsed) = patch::parse(&text) {
            let read = |path: &str| (path == "f").then(|| file.clone());
            let _ = patch::apply(&parsed, &read);
        }
        let _ = patch::parse(&format!("*** Begin Patch\n{text}*** End Patch\n"))
            .map(|p| patch::apply(&p, &|_: &str| Some(file.clone())));
    }
}

#[test]
fn generated_edits_and_diffs_never_panic() {
    let mut g = Gen(0x2545_F491_4F6C_DD1D);
    for _ in 0..3000 {
        let content = g.text(TEXT_PIECES, 24);
        let old = g.text(TEXT_PIECES, 6);
        let new = g.text(TEXT_PIECES, 6);
        let replace_all = g.next().is_multiple_of(2);
        if let Err(e) = edit::apply_edit(&content, &old, &new, replace_all) {
            let _ = e.to_string();
        }
        let _ = diff::unified("f", &content, &new, (g.next() % 4) as usize);
        let _ = diff::stats(&content, &old);
    }
}
