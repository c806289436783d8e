"""Go and Java TLS clients (their standard libraries, default settings, then TLS 1.2 only) reach
the service listener with an enrolled agent's certificate: what docs/tls.md promises."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import load_pem_x509_certificate

from kma.kmip.client import request_message
from kma.kmip.enums import Operation
from tests.support.agents import demo_passphrase, enroll, service_address
from tests.support.kma_process import RunningKma

GCM_1_2 = {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
DISCOVER = request_message([(Operation.DISCOVER_VERSIONS, b"")]).hex()

GO_CLIENT = """package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

func main() {
	dir, addr, max := os.Args[1], os.Args[2], os.Args[3]
	pool := x509.NewCertPool()
	ca, _ := os.ReadFile(dir + "/ca.pem")
	pool.AppendCertsFromPEM(ca)
	cert, err := tls.LoadX509KeyPair(dir+"/agent.pem", dir+"/agent.key")
	if err != nil { panic(err) }
	config := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, ServerName: "127.0.0.1"}
	if max == "1.2" { config.MaxVersion = tls.VersionTLS12 }
	conn, err := tls.Dial("tcp", addr, config)
	if err != nil { panic(err) }
	request, _ := hex.DecodeString(os.Args[4])
	conn.Write(request)
	header := make([]byte, 8)
	if _, err := io.ReadFull(conn, header); err != nil { panic(err) }
	state := conn.ConnectionState()
	version, suite := tls.VersionName(state.Version), tls.CipherSuiteName(state.CipherSuite)
	fmt.Printf("%s|%s|%x\\n", version, suite, header[:3])
}
"""

JAVA_CLIENT = """import java.io.*;
import java.security.KeyStore;
import java.security.cert.*;
import javax.net.ssl.*;

public class Client {
    public static void main(String[] args) throws Exception {
        String dir = args[0], host = args[1], max = args[3];
        KeyStore keys = KeyStore.getInstance("PKCS12");
        keys.load(new FileInputStream(dir + "/agent.p12"), "changeit".toCharArray());
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, "changeit".toCharArray());
        KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
        trust.load(null, null);
        trust.setCertificateEntry("ca", CertificateFactory.getInstance("X.509")
            .generateCertificate(new FileInputStream(dir + "/ca.pem")));
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
        int port = Integer.parseInt(args[2]);
        SSLSocket socket = (SSLSocket) context.getSocketFactory().createSocket(host, port);
        if (max.equals("1.2")) socket.setEnabledProtocols(new String[] {"TLSv1.2"});
        socket.startHandshake();
        byte[] request = java.util.HexFormat.of().parseHex(args[4]);
        socket.getOutputStream().write(request);
        byte[] header = new DataInputStream(socket.getInputStream()).readNBytes(8);
        SSLSession session = socket.getSession();
        System.out.println(session.getProtocol() + "|" + session.getCipherSuite() + "|"
            + java.util.HexFormat.of().formatHex(header, 0, 3));
    }
}
"""


@pytest.fixture(scope="module")
def kma(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningKma]:
    kma = RunningKma.demo_in(tmp_path_factory.mktemp("kmip-tls-clients"))
    yield kma
    kma.stop()


@pytest.fixture(scope="module")
def agent_dir(kma: RunningKma, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agent") / "t10k-dal-01"
    enroll(kma, "t10k-dal-01", out, demo_passphrase(kma, "t10k-dal-01"))
    key = serialization.load_pem_private_key((out / "agent.key").read_bytes(), password=None)
    cert = load_pem_x509_certificate((out / "agent.pem").read_bytes())
    p12 = pkcs12.serialize_key_and_certificates(
        b"agent",
        key,
        cert,
        None,
        serialization.BestAvailableEncryption(b"changeit"),  # type: ignore[arg-type]
    )
    (out / "agent.p12").write_bytes(p12)
    return out


def _run(command: list[str], cwd: Path) -> list[str]:
    result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=180, cwd=cwd)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.strip().split("|")


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain")
@pytest.mark.parametrize("max_version", ["default", "1.2"])
def test_go_crypto_tls(kma: RunningKma, agent_dir: Path, tmp_path: Path, max_version: str) -> None:
    (tmp_path / "client.go").write_text(GO_CLIENT)
    version, suite, tag = _run(
        ["go", "run", "client.go", str(agent_dir), service_address(kma), max_version, DISCOVER], tmp_path
    )
    assert tag == "42007b"  # a KMIP Response Message
    if max_version == "default":
        assert version == "TLS 1.3"
    else:
        assert version == "TLS 1.2" and suite in GCM_1_2


@pytest.mark.skipif(shutil.which("java") is None, reason="no Java runtime")
@pytest.mark.parametrize("max_version", ["default", "1.2"])
def test_java_jsse(kma: RunningKma, agent_dir: Path, tmp_path: Path, max_version: str) -> None:
    (tmp_path / "Client.java").write_text(JAVA_CLIENT)
    host, _, port = service_address(kma).rpartition(":")
    version, suite, tag = _run(
        ["java", "Client.java", str(agent_dir), host, port, max_version, DISCOVER], tmp_path
    )
    assert tag == "42007b"
    if max_version == "default":
        assert version == "TLSv1.3"
    else:
        assert version == "TLSv1.2" and suite in GCM_1_2
