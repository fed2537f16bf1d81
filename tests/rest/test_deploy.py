"""The Kubernetes manifests in deploy/kubernetes: valid against the Kubernetes API schemas
(kubernetes-validate, strict: unknown fields are errors), within the PodSecurity
`restricted` profile (`baseline` when rendered with --command-sandbox), with probes and a config that a real `toolshed serve` answers and
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
    ("toolshed.yaml", ["--command-sandbox"]),
    ("toolshed-replicas.yaml", ["--replicas", "3", "--command-sandbox", "--seccomp-profile", "team/toolshed.json",
                                "--apparmor-profile", "toolshed"]),
]


def pod_security_level(pod):
    """The highest Pod Security level (`restricted`, `baseline`, else `privileged`) the pod
    meets, by the controls of the Pod Security Standards at policy version 1.35 that a pod
    of these manifests can touch, and why it misses the next level up."""
    containers = pod.get("containers", []) + pod.get("initContainers", [])
    contexts = [c.get("securityContext") or {} for c in containers]
    pod_context = pod.get("securityContext") or {}
    user_namespace = pod.get("hostUsers") is False
    baseline, restricted = [], []
    if any(pod.get(k) for k in ("hostNetwork", "hostPID", "hostIPC")):
        baseline.append("host namespaces")
    if any(c.get("privileged") for c in contexts):
        baseline.append("privileged")
    allowed = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
               "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
    if any(set((c.get("capabilities") or {}).get("add", [])) - allowed for c in contexts):
        baseline.append("capabilities added")
    if any("hostPath" in v for v in pod.get("volumes", [])):
        baseline.append("hostPath")
    if any(p.get("hostPort") for c in containers for p in c.get("ports", [])):
        baseline.append("hostPort")
    for context in [pod_context, *contexts]:
        if (context.get("appArmorProfile") or {}).get("type", "RuntimeDefault") not in ("RuntimeDefault", "Localhost"):
            baseline.append("AppArmor unconfined")
        if (context.get("seccompProfile") or {}).get("type", "RuntimeDefault") not in ("RuntimeDefault", "Localhost"):
            baseline.append("seccomp unconfined")
    unmasked = [c for c in contexts if c.get("procMount", "Default") != "Default"]
    if unmasked:
        restricted.append("procMount: Unmasked")
        if not user_namespace:
            baseline.append("procMount: Unmasked without a user namespace")
    if any(c.get("allowPrivilegeEscalation") is not False for c in contexts):
        restricted.append("allowPrivilegeEscalation")
    if not user_namespace and not all(c.get("runAsNonRoot", pod_context.get("runAsNonRoot")) for c in contexts):
        restricted.append("runAsNonRoot")
    if not user_namespace and any(c.get("runAsUser", pod_context.get("runAsUser")) == 0 for c in contexts):
        restricted.append("runAsUser 0")
    for context in contexts:
        capabilities = context.get("capabilities") or {}
        if "ALL" not in capabilities.get("drop", []) or set(capabilities.get("add", [])) - {"NET_BIND_SERVICE"}:
            restricted.append("capabilities")
        if (context.get("seccompProfile") or pod_context.get("seccompProfile") or {}).get("type") \
                not in ("RuntimeDefault", "Localhost"):
            restricted.append("seccomp not set")
    core = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim",
            "projected", "secret"}
    if any(not (set(v) - {"name"}) <= core for v in pod.get("volumes", [])):
        restricted.append("volume types")
    if baseline:
        return "privileged", baseline
    return ("baseline", restricted) if restricted else ("restricted", [])


@pytest.mark.parametrize("manifest,values", VALUE_SETS)
def test_the_manifests_rendered_with_several_values_are_valid_and_keep_their_guarantees(manifest, values):
    import sys
    out = subprocess.run([sys.executable, str(RENDER), manifest, *values], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    documents = [d for d in yaml.safe_load_all(out) if d]
    for document in documents:
        kubernetes_validate.validate(document, KUBERNETES, strict=True)
    given, rest = {}, list(values)
    while rest:
        flag = rest.pop(0)
        given[flag] = rest.pop(0) if rest and not rest[0].startswith("--") else True
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
    # What every rendering keeps: the restricted profile (all of it but procMount where the
    # command sandbox is given what it needs) and the probes.
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["livenessProbe"] and container["readinessProbe"]
    level, misses = pod_security_level(pod)
    if "--command-sandbox" in values:
        assert (level, misses) == ("baseline", ["procMount: Unmasked"]), (level, misses)
        assert pod["hostUsers"] is False
        assert pod["securityContext"]["seccompProfile"] == {
            "type": "Localhost", "localhostProfile": given.get("--seccomp-profile", "profiles/toolshed.json")}
        if "--apparmor-profile" in given:
            assert container["securityContext"]["appArmorProfile"] == {
                "type": "Localhost", "localhostProfile": given["--apparmor-profile"]}
    else:
        assert (level, misses) == ("restricted", []), (level, misses)


def test_the_level_check_sees_what_each_level_forbids():
    """The check above is not vacuous: each setting the sandbox was once run with in a
    container (docs/sandbox.md) drops the pod below the level it forbids."""
    base = {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "t", "securityContext": {"allowPrivilegeEscalation": False,
                                                             "capabilities": {"drop": ["ALL"]}}}],
            "volumes": [{"name": "d", "emptyDir": {}}]}
    assert pod_security_level(base) == ("restricted", [])
    import copy
    for change, level in [
        (lambda p: p["securityContext"].update(seccompProfile={"type": "Unconfined"}), "privileged"),
        (lambda p: p["containers"][0]["securityContext"].update(appArmorProfile={"type": "Unconfined"}), "privileged"),
        (lambda p: p["containers"][0]["securityContext"].update(procMount="Unmasked"), "privileged"),
        (lambda p: (p["containers"][0]["securityContext"].update(procMount="Unmasked"), p.update(hostUsers=False)),
         "baseline"),
        (lambda p: p["containers"][0]["securityContext"]["capabilities"].update(add=["SYS_ADMIN"]), "privileged"),
        (lambda p: p["volumes"].append({"name": "h", "hostPath": {"path": "/"}}), "privileged"),
        (lambda p: p["containers"][0]["securityContext"].update(allowPrivilegeEscalation=True), "baseline"),
    ]:
        pod = copy.deepcopy(base)
        change(pod)
        assert pod_security_level(pod)[0] == level, (pod, pod_security_level(pod))


@pytest.mark.parametrize("manifest,values,says", [
    ("toolshed.yaml", ["--replicas", "2"], "one SQLite file"),
    ("toolshed-replicas.yaml", ["--storage", "5Gi"], "no volume claim"),
    ("toolshed.yaml", ["--memory", "lots"], "not a Kubernetes quantity"),
    ("toolshed.yaml", ["--namespace", "Team_B"], "not a Kubernetes name"),
    ("nope.yaml", [], "no manifest"),
    ("toolshed.yaml", ["--seccomp-profile", "profiles/toolshed.json"], "go with --command-sandbox"),
    ("toolshed.yaml", ["--command-sandbox", "--seccomp-profile", "/var/lib/kubelet/x.json"],
     "under the kubelet's seccomp directory"),
    ("toolshed.yaml", ["--command-sandbox", "--apparmor-profile", "two words"], "not an AppArmor profile name"),
])
def test_values_that_cannot_work_are_refused_with_why(manifest, values, says):
    import sys
    out = subprocess.run([sys.executable, str(RENDER), manifest, *values], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode != 0 and says in out.stderr, out.stderr


def test_the_seccomp_profile_allows_what_the_sandbox_is_built_from_and_refuses_the_kernels_reach():
    import json
    profile = json.loads((REPO / "deploy" / "kubernetes" / "seccomp" / "toolshed.json").read_text())
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32", "SCMP_ARCH_AARCH64"} <= set(profile["architectures"])
    denied = {name for rule in profile["syscalls"] if rule["action"] == "SCMP_ACT_ERRNO" for name in rule["names"]}
    assert all(rule["action"] == "SCMP_ACT_ERRNO" for rule in profile["syscalls"]), "the profile only refuses"
    # What the sandbox helper calls (crates/toolshed-ops/src/sandbox/helper): none refused.
    for needed in ("unshare", "setns", "mount", "umount2", "pivot_root", "clone", "clone3", "seccomp", "prctl",
                   "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "execve"):
        assert needed not in denied, needed
    # What no pod of toolshed's needs and what reaches the kernel's own state: refused.
    for kernel in ("kexec_load", "init_module", "finit_module", "bpf", "perf_event_open", "keyctl", "add_key",
                   "io_uring_setup", "userfaultfd", "ptrace", "open_by_handle_at", "reboot", "swapon",
                   "fsopen", "move_mount", "clock_settime"):
        assert kernel in denied, kernel
