"""The Kubernetes manifests in deploy/kubernetes: valid against the Kubernetes API schemas
(kubernetes-validate, strict: unknown fields are errors), within the PodSecurity
`restricted` profile, with probes and a config that a real `toolshed serve` answers and
loads."""

import os
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "deploy" / "kubernetes" / "toolshed.yaml"
KUBERNETES = "1.33"


@pytest.fixture(scope="module")
def documents():
    return [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]


def test_every_document_is_valid_kubernetes(documents):
    kinds = [d["kind"] for d in documents]
    assert kinds == ["ConfigMap", "PersistentVolumeClaim", "Deployment", "Service"], kinds
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)


def test_the_pod_fits_the_restricted_profile_and_drains_in_time(documents):
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False
        assert context["capabilities"]["drop"] == ["ALL"]
        assert "privileged" not in context and "add" not in context["capabilities"]
    assert not any("hostPath" in v for v in pod["volumes"])
    config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]["config.toml"]
    grace = int(config.split("shutdown_grace_secs = ")[1].split()[0])
    assert pod["terminationGracePeriodSeconds"] > grace + 5, "the pod is killed before its calls may finish"
    assert deployment["spec"]["strategy"]["type"] == "Recreate", "one SQLite file: never two pods at once"


def test_the_probes_and_the_config_work_on_a_real_server(documents, toolshed_bin, tmp_path):
    config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]["config.toml"]
    (tmp_path / "config.toml").write_text(config)
    (tmp_path / "workspace").mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TOOLSHED_HOME": str(tmp_path / "data"),
           "TOOLSHED_CONFIG": str(tmp_path / "config.toml"), "TOOLSHED_CURATED_DIR": str(tmp_path / "none")}
    server = subprocess.Popen(
        [toolshed_bin, "--workspace", str(tmp_path / "workspace"), "serve", "--port", "0"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        base = None
        for line in server.stderr:
            assert not line.startswith("warning: unknown config key"), line
            if line.startswith("listening on "):
                base = line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0]
                break
        assert base, "toolshed serve did not start with the manifest's config"
        threading.Thread(target=lambda: [None for _ in server.stderr], daemon=True).start()
        port = base.rsplit(":", 1)[1]
        deployment = next(d for d in documents if d["kind"] == "Deployment")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        for probe in ("livenessProbe", "readinessProbe"):
            get = container[probe]["httpGet"]
            headers = {h["name"]: h["value"].replace("7070", port) for h in get.get("httpHeaders", [])}
            request = urllib.request.Request(f"{base}{get['path']}", headers=headers)
            with urllib.request.urlopen(request, timeout=10) as res:
                assert res.status == 200, probe
        # A service name from the config is accepted as Host.
        named = urllib.request.Request(f"{base}/health", headers={"Host": f"toolshed:{port}"})
        try:
            status = urllib.request.urlopen(named, timeout=10).status
        except urllib.error.HTTPError as e:
            status = e.code
        assert status == (200 if port == "7070" else 403), "allowed_hosts names port 7070"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
