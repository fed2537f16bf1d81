"""mail_send against a real SMTP server on loopback (aiosmtpd): STARTTLS with a test CA
toolshed is told to trust, AUTH LOGIN/PLAIN only after TLS, the exact message with its
attachment received; a wrong password and a refused recipient each answered clearly,
without the password."""

import asyncio
import email
import email.policy
import os
import socket
import ssl
import subprocess

import pytest
import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult
from mcp import Client

PASSWORD = "smtp-pass-canary-7731"


class Inbox:
    def __init__(self):
        self.messages = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.endswith("@refused.example"):
            return "550 5.1.1 <%s>: Recipient address rejected: User unknown" % address
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content, session.authenticated))
        return "250 Message accepted for delivery"


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = auth_data.login == b"bot" and auth_data.password == PASSWORD.encode()
    # handled=False: aiosmtpd answers 535 itself when the login is wrong.
    return AuthResult(success=ok, handled=False)


@pytest.fixture
def smtp(tmp_path):
    ca = trustme.CA()
    cert = ca.issue_cert("localhost", "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    inbox = Inbox()
    controller = Controller(
        inbox, hostname="127.0.0.1", port=port, server_hostname="localhost",
        tls_context=context, require_starttls=True, authenticator=authenticator,
        auth_require_tls=True, auth_exclude_mechanism=["CRAM-MD5"],
    )
    controller.start()
    yield port, ca_file, inbox
    controller.stop()


def run(coro, timeout=60):
    return asyncio.run(asyncio.wait_for(coro, timeout=timeout))


def configure(toolshed_bin, workspace, home, port, ca_file, password=PASSWORD):
    env = dict(os.environ, TOOLSHED_HOME=str(home), TOOLSHED_CURATED_DIR=str(home / "no-curated"))

    def cli(*args, stdin=None):
        return subprocess.run(
            [toolshed_bin, "--workspace", str(workspace), "plugins", "config", "system.mail", *args],
            env=env, input=stdin, capture_output=True, text=True, timeout=30, check=True,
        )

    cli("host", "localhost")
    cli("port", str(port))
    cli("security", "starttls")
    cli("user", "bot")
    cli("password", "-", stdin=password)
    cli("from", "Build Bot <bot@example.com>")
    cli("ca_file", str(ca_file))


def test_mail_send_delivers_the_exact_message_over_starttls_with_auth(server, toolshed_bin, workspace, home, smtp):
    port, ca_file, inbox = smtp
    configure(toolshed_bin, workspace, home, port, ca_file)
    (workspace / "report.csv").write_bytes(b"day,builds\nmon,12\n")

    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("mail_send", {
                "to": ["Ada <ada@example.com>"], "cc": ["ops@example.com"], "bcc": ["audit@example.com"],
                "subject": "Weekly builds", "text": "Numbers attached.", "html": "<p>Numbers attached.</p>",
                "attachments": ["report.csv"],
            })
            assert not result.is_error, result.content
            assert result.structured_content["sent"] is True

    run(main())
    [(sender, rcpts, content, authenticated)] = inbox.messages
    assert authenticated, "AUTH happened (only possible after STARTTLS)"
    assert sender == "bot@example.com"
    assert sorted(rcpts) == ["ada@example.com", "audit@example.com", "ops@example.com"]
    message = email.message_from_bytes(content, policy=email.policy.default)
    assert message["Subject"] == "Weekly builds"
    assert message["From"] == "Build Bot <bot@example.com>"
    assert message["To"] == "Ada <ada@example.com>" and message["Cc"] == "ops@example.com"
    assert message["Bcc"] is None
    assert message.get_body(("plain",)).get_content().strip() == "Numbers attached."
    assert message.get_body(("html",)).get_content().strip() == "<p>Numbers attached.</p>"
    [attachment] = list(message.iter_attachments())
    assert attachment.get_filename() == "report.csv"
    assert attachment.get_content_type() == "text/csv"
    assert attachment.get_payload(decode=True) == b"day,builds\nmon,12\n"


def test_a_wrong_password_and_a_refused_recipient_are_told_apart(server, toolshed_bin, workspace, home, smtp):
    port, ca_file, inbox = smtp
    configure(toolshed_bin, workspace, home, port, ca_file, password="wrong-" + PASSWORD)

    async def main():
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("mail_send", {"to": ["a@example.com"], "subject": "x", "text": "y"})
            assert result.is_error
            text = result.content[0].text
            assert "535" in text and "check `user` and `password`" in text, text
            assert PASSWORD not in text
        configure(toolshed_bin, workspace, home, port, ca_file)
        async with Client(server(), mode="legacy") as client:
            result = await client.call_tool("mail_send", {"to": ["nobody@refused.example"], "subject": "x", "text": "y"})
            assert result.is_error
            text = result.content[0].text
            assert "550" in text and "refused an address" in text, text

    run(main())
    assert inbox.messages == []
