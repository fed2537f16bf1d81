//! Skills read from folders: listed, loaded, refused with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn root(dir: &Path, source: &str, in_workspace: Option<&str>) -> SkillRoot {
    SkillRoot {
        dir: dir.to_path_buf(),
        source: source.into(),
        in_workspace: in_workspace.map(str::to_string),
    }
}

fn write(dir: &Path, rel: &str, text: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

#[test]
fn skills_are_read_with_their_front_matter_and_bad_ones_are_named() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    write(
        a.path(),
        "csv-report/SKILL.md",
        "---\nname: csv-report\ndescription: Turn a CSV into a report.\n---\n# Steps\nRun scripts/report.sh\n",
    );
    write(a.path(), "csv-report/scripts/report.sh", "echo report\n");
    write(a.path(), "no-front/SKILL.md", "# Just text\n");
    write(
        a.path(),
        "Bad/SKILL.md",
        "---\nname: Bad Name\ndescription: x\n---\nbody\n",
    );
    write(
        a.path(),
        "nodesc/SKILL.md",
        "---\nname: nodesc\n---\nbody\n",
    );
    write(
        b.path(),
        "csv-report/SKILL.md",
        "---\nname: csv-report\ndescription: Another.\n---\n",
    );
    write(
        b.path(),
        "big/SKILL.md",
        &format!(
            "---\nname: big\ndescription: d\n---\n{}",
            "x".repeat(300 * 1024)
        ),
    );
    let (skills, problems) = discover(&[
        root(a.path(), "workspace", Some(".toolshed/skills")),
        root(b.path(), "user", None),
    ]);
    assert_eq!(skills.len(), 1, "{skills:?}");
    let s = &skills[0];
    assert_eq!(
        (s.name.as_str(), s.description.as_str()),
        ("csv-report", "Turn a CSV into a report.")
    );
    assert_eq!(s.body, "# Steps\nRun scripts/report.sh\n");
    assert_eq!(
        s.workspace_dir.as_deref(),
        Some(".toolshed/skills/csv-report")
    );
    let all = problems.join("\n");
    for expected in [
        "does not start with YAML front matter",
        "is not a skill name",
        "has no `description`",
        "taken by a skill found earlier",
        "a SKILL.md may have at most",
    ] {
        assert!(all.contains(expected), "{expected}: {all}");
    }
    let (files, cut) = files_of(&s.dir);
    assert_eq!(files, ["SKILL.md", "scripts/report.sh"]);
    assert!(!cut);
}
