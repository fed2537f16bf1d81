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


REPLICAS = REPO / "deploy" / "kubernetes" / "toolshed-replicas.yaml"


@pytest.fixture(scope="module")
def replica_documents():
    return [d for d in yaml.safe_load_all(REPLICAS.read_text()) if d]


def test_the_replicas_manifest_is_valid_rolls_and_takes_its_store_and_key_from_secrets(replica_documents):
    kinds = [d["kind"] for d in replica_documents]
    assert kinds == ["ConfigMap", "Deployment", "Service"], kinds
    for document in replica_documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)
    deployment = next(d for d in replica_documents if d["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] >= 2
    assert deployment["spec"]["strategy"]["type"] == "RollingUpdate"
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    (container,) = pod["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    url = next(e for e in container["env"] if e["name"] == "TOOLSHED_STORE__URL")
    assert url["valueFrom"]["secretKeyRef"]["name"] == "toolshed-store"
    key = next(m for m in container["volumeMounts"] if m["name"] == "key")
    assert key["mountPath"] == "/data/secret.key" and key["readOnly"] is True
    secret = next(v for v in pod["volumes"] if v["name"] == "key")["secret"]
    # Readable by the pod's group (fsGroup), not by others.
    assert secret["defaultMode"] == 0o440
    assert not any("persistentVolumeClaim" in v for v in pod["volumes"]), "no per-pod volume to share"


def test_two_servers_with_the_replicas_config_share_one_database(replica_documents, toolshed_bin, tmp_path):
    admin_url = os.environ.get("TOOLSHED_TEST_POSTGRES_URL")
    if not admin_url:
        assert not os.environ.get("TOOLSHED_REQUIRE_POSTGRES"), "TOOLSHED_TEST_POSTGRES_URL is not set"
        pytest.skip("no Postgres: run through scripts/test")
    import glob
    import time
    psql = sorted(glob.glob("/usr/lib/postgresql/*/bin/psql"))[-1]
    database = f"deploy_{os.getpid()}_{int(time.time() * 1000)}"
    subprocess.run([psql, admin_url, "-qAt", "-c", f"CREATE DATABASE {database}"], check=True, timeout=30)
    store_url = admin_url.rsplit("/", 1)[0] + "/" + database
    config = next(d for d in replica_documents if d["kind"] == "ConfigMap")["data"]["config.toml"]
    (tmp_path / "config.toml").write_text(config)
    (tmp_path / "workspace").mkdir()
    key = os.urandom(32)
    servers, bases, envs = [], [], []
    try:
        for name in ("one", "two"):
            data = tmp_path / name
            data.mkdir()
            (data / "secret.key").write_bytes(key)
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TOOLSHED_HOME": str(data),
                   "TOOLSHED_CONFIG": str(tmp_path / "config.toml"), "TOOLSHED_STORE__URL": store_url,
                   "TOOLSHED_CURATED_DIR": str(tmp_path / "none")}
            server = subprocess.Popen(
                [toolshed_bin, "--workspace", str(tmp_path / "workspace"), "serve", "--port", "0"],
                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            servers.append(server)
            for line in server.stderr:
                assert not line.startswith("warning: unknown config key"), line
                if line.startswith("listening on "):
                    bases.append(line.split(" ", 2)[2].strip().rsplit("/mcp", 1)[0])
                    break
            threading.Thread(target=lambda s=server: [None for _ in s.stderr], daemon=True).start()
            envs.append(env)
        assert len(bases) == 2, "both servers start with the replicas config"
        token = subprocess.run([toolshed_bin, "token", "create", "--owner", "team"], env=envs[0],
                               capture_output=True, text=True, check=True, timeout=30).stdout.strip()
        for base in bases:
            request = urllib.request.Request(f"{base}/api/v1/health", headers={"Authorization": f"Bearer {token}"})
            with urllib.request.urlopen(request, timeout=10) as res:
                assert res.status == 200
            call = urllib.request.Request(
                f"{base}/api/v1/tools/calculator/execute", method="POST",
                data=b'{"arguments":{"expression":"6*7"}}',
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            with urllib.request.urlopen(call, timeout=10) as res:
                assert b'"42"' in res.read()
    finally:
        for server in servers:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)


RENDER = REPO / "deploy" / "kubernetes" / "render.py"

VALUE_SETS = [
    ("toolshed.yaml", []),
    ("toolshed.yaml", ["--image", "registry.example/toolshed:1.4.2", "--namespace", "agents",
                       "--storage", "20Gi", "--cpu", "4", "--memory", "4Gi"]),
    ("toolshed-replicas.yaml", []),
    ("toolshed-replicas.yaml", ["--replicas", "5", "--namespace", "team-b", "--host", "tools.internal:443",
                                "--memory", "512Mi", "--cpu", "500m"]),
    ("toolshed-replicas.yaml", ["--replicas", "1", "--image", "toolshed:latest"]),
]


@pytest.mark.parametrize("manifest,values", VALUE_SETS)
def test_the_manifests_rendered_with_several_values_are_valid_and_keep_their_guarantees(manifest, values):
    import sys
    out = subprocess.run([sys.executable, str(RENDER), manifest, *values], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    documents = [d for d in yaml.safe_load_all(out) if d]
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)
    given = dict(zip(values[::2], values[1::2]))
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    if "--replicas" in given:
        assert deployment["spec"]["replicas"] == int(given["--replicas"])
    if "--image" in given:
        assert container["image"] == given["--image"]
    if "--namespace" in given:
        assert {d["metadata"]["namespace"] for d in documents} == {given["--namespace"]}
        config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]["config.toml"]
        assert f"toolshed.{given['--namespace']}.svc:7070" in config and "default.svc" not in config, config
    if "--host" in given:
        config = next(d for d in documents if d["kind"] == "ConfigMap")["data"]["config.toml"]
        assert f'"{given["--host"]}"' in config
    if "--memory" in given:
        assert container["resources"]["limits"]["memory"] == given["--memory"]
    if "--storage" in given:
        claim = next(d for d in documents if d["kind"] == "PersistentVolumeClaim")
        assert claim["spec"]["resources"]["requests"]["storage"] == given["--storage"]
    # What every rendering keeps: the restricted profile and the probes.
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["livenessProbe"] and container["readinessProbe"]


@pytest.mark.parametrize("manifest,values,says", [
    ("toolshed.yaml", ["--replicas", "2"], "one SQLite file"),
    ("toolshed-replicas.yaml", ["--storage", "5Gi"], "no volume claim"),
    ("toolshed.yaml", ["--memory", "lots"], "not a Kubernetes quantity"),
    ("toolshed.yaml", ["--namespace", "Team_B"], "not a Kubernetes name"),
    ("nope.yaml", [], "no manifest"),
])
def test_values_that_cannot_work_are_refused_with_why(manifest, values, says):
    import sys
    out = subprocess.run([sys.executable, str(RENDER), manifest, *values], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0 and says in out.stderr, out.stderr
