"""A plugin store in Agent Spaces' index format, served from loopback: `plugins search`
finds what it offers, `plugins install ID` fetches a plugin (its .zip, or its files one by
one) and checks it against the index's md5 before anything is put in place, `plugins
update ID` installs a newer version, and a wrong md5 installs nothing."""

import contextlib
import functools
import hashlib
import json
import os
import shutil
import subprocess
import threading
import zipfile
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SEEDS = REPO / "tests" / "fixtures" / "seed-plugins"


def folder_md5(root: Path) -> str:
    """Agent Spaces' folder digest: the MD5 of the sorted MD5s of every file."""
    sums = sorted(
        hashlib.md5(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and "node_modules" not in p.parts and ".git" not in p.parts
    )
    return hashlib.md5("".join(sums).encode()).hexdigest()


class Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serving_dir(root: Path):
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()


def run(toolshed_bin, workspace, home, *args, check=True):
    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated"))
    done = subprocess.run(
        [toolshed_bin, "--workspace", str(workspace), "--config", str(home / "store.toml"), *args],
        env=env, capture_output=True, text=True, timeout=120,
    )
    if check:
        assert done.returncode == 0, done.stdout + done.stderr
    return done


def entry(plugin_id, name, version, path, md5, tags):
    return {
        "id": plugin_id, "name": name, "version": version, "description": f"{name}, from the store.",
        "author": {"name": "toolshed tests"}, "tags": tags, "type": "server", "hasView": False,
        "hasWorkflow": True, "path": path, "iconUrl": f"plugins/{path}/icon.svg", "md5": md5,
        "updatedAt": "2026-12-01T00:00:00.000Z",
    }


def test_a_store_in_agent_spaces_format_installs_checks_and_updates(toolshed_bin, workspace, home, tmp_path):
    store = tmp_path / "site" / "plugins"
    store.mkdir(parents=True)
    # Served file by file: the static text kit.
    shutil.copytree(SEEDS / "spaces-static", store / "text-kit")
    # Served as an archive: the Cyrene echo plugin.
    with zipfile.ZipFile(store / "echo.zip", "w") as z:
        for p in sorted((SEEDS / "cyrene-echo").rglob("*")):
            z.write(p, p.relative_to(SEEDS / "cyrene-echo"))
    index = [
        entry("workflow.text-kit", "Text kit", "1.0.0", "text-kit", folder_md5(store / "text-kit"), ["text"]),
        entry("cyrene-echo", "Echo", "1.2.0", "echo", folder_md5(SEEDS / "cyrene-echo"), ["demo"]),
        entry("workflow.broken", "Broken", "1.0.0", "broken", "0" * 32, ["text"]),
    ]
    shutil.copytree(SEEDS / "spaces-static", store / "broken")
    info = json.loads((store / "broken" / "info.json").read_text())
    (store / "broken" / "info.json").write_text(json.dumps({**info, "id": "workflow.broken"}))
    (store / "index.json").write_text(json.dumps(index))
    zh = [dict(e, name="文本工具") if e["id"] == "workflow.text-kit" else e for e in index]
    (store / "index_zh.json").write_text(json.dumps(zh, ensure_ascii=False))

    with serving_dir(tmp_path / "site") as site:
        (home / "store.toml").write_text(
            f'[plugins]\ndownload_hosts = ["{site}"]\n[[plugins.stores]]\nurl = "http://{site}/plugins/"\n'
        )
        found = json.loads(run(toolshed_bin, workspace, home, "plugins", "search", "text", "--json").stdout)
        assert sorted(p["id"] for p in found["plugins"]) == ["workflow.broken", "workflow.text-kit"], found
        assert all(p["installed"] is None for p in found["plugins"])
        table = run(toolshed_bin, workspace, home, "plugins", "search", "demo").stdout
        assert "cyrene-echo" in table and "text-kit" not in table, table

        # File by file, and from the archive.
        done = run(toolshed_bin, workspace, home, "plugins", "install", "workflow.text-kit")
        assert "workflow.text-kit 1.0.0: installed" in done.stdout, done.stdout + done.stderr
        done = run(toolshed_bin, workspace, home, "plugins", "install", "cyrene-echo")
        assert "cyrene-echo 1.2.0: installed" in done.stdout, done.stdout + done.stderr
        listed = {p["id"]: p for p in json.loads(run(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)["plugins"]}
        assert listed["workflow.text-kit"]["state"] == "running", listed["workflow.text-kit"]
        assert listed["workflow.text-kit"]["tools"] == ["text_kit_count_words", "text_kit_page_title"]
        assert listed["workflow.text-kit"]["provenance"]["source"] == f"http://{site}/plugins/text-kit"
        assert listed["cyrene-echo"]["state"] == "running", listed["cyrene-echo"]
        said = run(toolshed_bin, workspace, home, "call", "text_kit_count_words", "--args", '{"text": "a b"}').stdout
        assert "2 word(s)" in said, said

        # The index's digest does not match the files: nothing is installed.
        refused = run(toolshed_bin, workspace, home, "plugins", "install", "workflow.broken", check=False)
        assert refused.returncode != 0 and "digest" in refused.stderr and "nothing was installed" in refused.stderr, refused.stderr
        assert not (home / "plugins" / "workflow.broken").exists()
        assert sorted(p.name for p in (home / "plugins").iterdir() if p.name.startswith(".staging")) == []
        # An id no store offers.
        missing = run(toolshed_bin, workspace, home, "plugins", "install", "workflow.nowhere", check=False)
        assert missing.returncode == 2 and "no configured store offers it" in missing.stderr, missing.stderr

        # Up to date, then a newer version in the index.
        assert "up to date" in run(toolshed_bin, workspace, home, "plugins", "update", "workflow.text-kit").stdout
        info = json.loads((store / "text-kit" / "info.json").read_text())
        (store / "text-kit" / "info.json").write_text(json.dumps({**info, "version": "1.1.0"}))
        index[0] = entry("workflow.text-kit", "Text kit", "1.1.0", "text-kit", folder_md5(store / "text-kit"), ["text"])
        (store / "index.json").write_text(json.dumps(index))
        (store / "index_zh.json").unlink()
        found = json.loads(run(toolshed_bin, workspace, home, "plugins", "search", "kit", "--json").stdout)
        assert found["plugins"][0]["installed"] == "1.0.0" and found["plugins"][0]["version"] == "1.1.0", found
        done = run(toolshed_bin, workspace, home, "plugins", "update", "workflow.text-kit")
        assert "workflow.text-kit 1.1.0: updated" in done.stdout, done.stdout + done.stderr

        # The localized index names it in the language asked for.
        (store / "index_zh.json").write_text(json.dumps(zh, ensure_ascii=False))
        env_zh = dict(os.environ, TOOLSHED_LANG="zh")
        out = subprocess.run(
            [toolshed_bin, "--workspace", str(workspace), "--config", str(home / "store.toml"), "plugins", "search", "--json"],
            env=dict(env_zh, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated")),
            capture_output=True, text=True, timeout=60, check=True,
        )
        names = {p["id"]: p["name"] for p in json.loads(out.stdout)["plugins"]}
        assert names["workflow.text-kit"] == "文本工具", names


def test_a_plugin_installs_from_a_directory_url_checked_by_its_md5(toolshed_bin, workspace, home, tmp_path):
    site_root = tmp_path / "site"
    shutil.copytree(SEEDS / "spaces-static", site_root / "plugins" / "text-kit")
    digest = folder_md5(site_root / "plugins" / "text-kit")
    with serving_dir(site_root) as site:
        (home / "store.toml").write_text(f'[plugins]\ndownload_hosts = ["{site}"]\n')
        url = f"http://{site}/plugins/text-kit/"
        # Without an md5: refused, saying what to give.
        bare = run(toolshed_bin, workspace, home, "plugins", "install", url, check=False)
        assert bare.returncode == 2 and "--md5" in bare.stderr, bare.stderr
        # A wrong one: nothing installed.
        wrong = run(toolshed_bin, workspace, home, "plugins", "install", url, "--md5", "f" * 32, check=False)
        assert wrong.returncode == 1 and "digest" in wrong.stderr, wrong.stderr
        assert not (home / "plugins" / "workflow.text-kit").exists()
        done = run(toolshed_bin, workspace, home, "plugins", "install", url, "--md5", digest)
        assert "workflow.text-kit 1.0.0: installed" in done.stdout, done.stdout + done.stderr
        listed = {p["id"]: p for p in json.loads(run(toolshed_bin, workspace, home, "plugins", "list", "--json").stdout)["plugins"]}
        assert listed["workflow.text-kit"]["state"] == "running"
        assert listed["workflow.text-kit"]["provenance"]["source"] == url.rstrip("/")


def test_search_shows_a_stores_ratings_and_downloads_best_first(toolshed_bin, workspace, home, tmp_path):
    store = tmp_path / "site" / "plugins"
    store.mkdir(parents=True)
    index = [
        {**entry("kit.plain", "Plain kit", "1.0.0", "plain", "0" * 32, ["kit"])},
        {**entry("kit.popular", "Popular kit", "1.0.0", "popular", "0" * 32, ["kit"]),
         "rating": {"average": 4.6, "count": 212}, "downloads": 9100},
        {**entry("kit.liked", "Liked kit", "1.0.0", "liked", "0" * 32, ["kit"]),
         "rating": 4.6, "ratingCount": 12, "downloads": 40},
        {**entry("kit.bold", "Bold kit", "1.0.0", "bold", "0" * 32, ["kit"]), "rating": 9, "downloads": 5},
        {**entry("kit.meh", "Meh kit", "1.0.0", "meh", "0" * 32, ["kit"]), "rating": 2.5},
    ]
    (store / "index.json").write_text(json.dumps(index))
    with serving_dir(tmp_path / "site") as site:
        (home / "store.toml").write_text(
            f'[plugins]\ndownload_hosts = ["{site}"]\n[[plugins.stores]]\nurl = "http://{site}/plugins/"\n'
        )
        found = json.loads(run(toolshed_bin, workspace, home, "plugins", "search", "kit", "--json").stdout)["plugins"]
        # Best rated first, a tie broken by downloads; an out-of-range rating is left out.
        assert [p["id"] for p in found] == ["kit.popular", "kit.liked", "kit.meh", "kit.bold", "kit.plain"], found
        popular = found[0]
        assert (popular["rating"], popular["ratings"], popular["downloads"]) == (4.6, 212, 9100), popular
        bold = next(p for p in found if p["id"] == "kit.bold")
        assert bold["rating"] is None and bold["downloads"] == 5, bold
        table = run(toolshed_bin, workspace, home, "plugins", "search", "kit").stdout
        assert "RATING" in table and "DOWNLOADS" in table, table
        assert "4.6 (212)" in table and "9100" in table, table
        assert table.index("kit.popular") < table.index("kit.plain"), table
