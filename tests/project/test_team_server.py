"""The team server page's reverse-proxy example: nginx accepts it as written (``nginx -t``)."""

from __future__ import annotations

import datetime
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "examples" / "team-server" / "nginx.conf"
LIVE = "/etc/letsencrypt/live/memory.example.com/"


def _certificate(folder: Path) -> None:
    crypto = pytest.importorskip("cryptography")
    del crypto
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "memory.example.com")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    (folder / "fullchain.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "privkey.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )


def test_the_example_proxies_only_mcp_to_loopback():
    text = CONF.read_text("utf-8")
    assert "proxy_pass http://127.0.0.1:8765;" in text
    assert "proxy_buffering off;" in text and "listen 443 ssl" in text
    assert "proxy_set_header Host" not in text  # loopback Host for DNS-rebinding protection


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
def test_nginx_accepts_the_example(tmp_path: Path):
    _certificate(tmp_path)
    (tmp_path / "tmp").mkdir()
    (tmp_path / "logs").mkdir()
    conf = tmp_path / "nginx.conf"
    conf.write_text(CONF.read_text("utf-8").replace(LIVE, f"{tmp_path}/"), "utf-8")
    result = subprocess.run(
        ["nginx", "-t", "-p", f"{tmp_path}/", "-c", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "syntax is ok" in result.stderr
