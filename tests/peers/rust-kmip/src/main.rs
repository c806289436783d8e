//! A KMIP client this project did not write, run against a real KMA by
//! tests/integration/test_kmip_peer_rust.py.
//!
//! KMIP 1.0: NLnet Labs' `kmip-protocol` (the client Krill uses), which speaks 1.0 for these
//! operations. KMIP 1.4, 2.0 and 2.1: requests built from Cosmian's `cosmian_kmip` 1.4 and 2.1
//! types and encoded by its TTLV serializer; answers decoded by its TTLV decoder.
//!
//! Usage: kms-peer-rust-kmip <1.0|1.4|2.0|2.1> <host:port> <enrolled-agent-folder> start <key-name>
//!        kms-peer-rust-kmip <1.0|1.4|2.0|2.1> <host:port> <enrolled-agent-folder> retire <key-id>
//! `start` runs Create (AES-256, named), Activate, Get and Locate by name; `retire` runs Revoke,
//! Destroy and a Get that must then fail. Two runs, so that a test can read the key another way
//! between them. One JSON line per step: {"step": ..., "ok": true|false, ...}; a run stops at
//! its first failing step and exits 0 only when every step went as it should.

mod cosmian;
mod v1;
mod v14;
mod v2;

use std::{fs, path::Path, process::ExitCode};

use openssl::{
    pkey::PKey,
    ssl::{SslConnector, SslMethod},
    x509::X509,
};
use serde_json::{json, Value};

/// The enrolled agent's files, as `kma agent enroll` writes them.
pub struct Agent {
    pub cert: Vec<u8>,
    pub key: Vec<u8>,
    pub ca: Vec<u8>,
}

impl Agent {
    fn read(folder: &Path) -> std::io::Result<Self> {
        Ok(Self {
            cert: fs::read(folder.join("agent.pem"))?,
            key: fs::read(folder.join("agent.key"))?,
            ca: fs::read(folder.join("ca.pem"))?,
        })
    }

    /// Mutual TLS: the agent's certificate and key, the KMA's certificate checked against ca.pem.
    pub fn connector(&self) -> Result<SslConnector, String> {
        let err = |e: openssl::error::ErrorStack| e.to_string();
        let mut builder = SslConnector::builder(SslMethod::tls()).map_err(err)?;
        let cert = X509::from_pem(&self.cert).map_err(err)?;
        let key = PKey::private_key_from_pem(&self.key).map_err(err)?;
        builder.set_certificate(&cert).map_err(err)?;
        builder.set_private_key(&key).map_err(err)?;
        builder
            .cert_store_mut()
            .add_cert(X509::from_pem(&self.ca).map_err(err)?)
            .map_err(err)?;
        Ok(builder.build())
    }
}

/// Prints one step's line; returns whether the step succeeded.
pub fn report(step: &str, outcome: Result<Value, String>) -> bool {
    let mut line = serde_json::Map::new();
    line.insert("step".into(), json!(step));
    line.insert("ok".into(), json!(outcome.is_ok()));
    match &outcome {
        Ok(Value::Object(fields)) => line.extend(fields.clone()),
        Ok(_) => {}
        Err(error) => {
            line.insert("error".into(), json!(error));
        }
    }
    let line = Value::Object(line);
    println!("{line}");
    outcome.is_ok()
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, version, address, folder, command, arg] = args.as_slice() else {
        eprintln!("usage: kms-peer-rust-kmip <1.0|1.4|2.0|2.1> <host:port> <agent-folder> start <key-name>|retire <key-id>");
        return ExitCode::from(2);
    };
    let agent = match Agent::read(Path::new(folder)) {
        Ok(agent) => agent,
        Err(e) => {
            eprintln!("cannot read the enrolled agent's files in {folder}: {e}");
            return ExitCode::from(2);
        }
    };
    let completed = match (version.as_str(), command.as_str()) {
        ("1.0", "start") => v1::start(&agent, address, arg),
        ("1.0", "retire") => v1::retire(&agent, address, arg),
        ("1.4", "start") => cosmian::start::<v14::V14>(&agent, address, arg),
        ("1.4", "retire") => cosmian::retire::<v14::V14>(&agent, address, arg),
        ("2.0", "start") => cosmian::start::<v2::V20>(&agent, address, arg),
        ("2.0", "retire") => cosmian::retire::<v2::V20>(&agent, address, arg),
        ("2.1", "start") => cosmian::start::<v2::V21>(&agent, address, arg),
        ("2.1", "retire") => cosmian::retire::<v2::V21>(&agent, address, arg),
        _ => {
            eprintln!(
                "this peer speaks KMIP 1.0, 1.4, 2.0 and 2.1, and knows `start` and `retire`"
            );
            return ExitCode::from(2);
        }
    };
    if completed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
