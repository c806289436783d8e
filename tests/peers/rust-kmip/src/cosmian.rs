//! Requests made of Cosmian's cosmian_kmip types (KMIP 1.4 or 2.x), encoded by its TTLV
//! serializer; answers decoded by its TTLV decoder and read by tag, so a field the KMA adds or
//! leaves out is judged here, not by a typed mapping.

use std::{
    io::{Read, Write},
    net::TcpStream,
};

use cosmian_kmip::{
    kmip_0::{
        kmip_messages::{RequestMessage, RequestMessageBatchItemVersioned, RequestMessageHeader},
        kmip_types::ProtocolVersion,
    },
    ttlv::{to_ttlv, KmipFlavor, TTLValue, TTLV},
};
use openssl::ssl::SslStream;
use serde_json::{json, Value};

use crate::{report, Agent};

/// One KMIP version's requests for the steps of a key's life.
pub trait Dialect {
    const VERSION: (i32, i32);
    fn create(name: &str) -> RequestMessageBatchItemVersioned;
    fn activate(id: &str) -> RequestMessageBatchItemVersioned;
    fn get(id: &str) -> RequestMessageBatchItemVersioned;
    fn locate(name: &str) -> RequestMessageBatchItemVersioned;
    fn revoke(id: &str) -> RequestMessageBatchItemVersioned;
    fn destroy(id: &str) -> RequestMessageBatchItemVersioned;
}

struct Peer {
    tls: SslStream<TcpStream>,
    version: (i32, i32),
}

impl Peer {
    fn connect(agent: &Agent, address: &str, version: (i32, i32)) -> Result<Self, String> {
        let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
        let tcp = TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
        let tls = agent
            .connector()?
            .connect(host, tcp)
            .map_err(|e| format!("TLS: {e}"))?;
        Ok(Self { tls, version })
    }

    fn flavor(&self) -> KmipFlavor {
        if self.version.0 >= 2 {
            KmipFlavor::Kmip2
        } else {
            KmipFlavor::Kmip1
        }
    }

    /// One operation in one message; the answer's payload, or the KMA's reason and message.
    fn call(&mut self, item: RequestMessageBatchItemVersioned) -> Result<TTLV, String> {
        let (major, minor) = self.version;
        let request = RequestMessage {
            request_header: RequestMessageHeader {
                protocol_version: ProtocolVersion {
                    protocol_version_major: major,
                    protocol_version_minor: minor,
                },
                batch_count: 1,
                ..RequestMessageHeader::default()
            },
            batch_item: vec![item],
        };
        let ttlv = to_ttlv(&request).map_err(|e| format!("encode: {e}"))?;
        let bytes = ttlv
            .to_bytes(self.flavor())
            .map_err(|e| format!("encode: {e}"))?;
        self.tls
            .write_all(&bytes)
            .map_err(|e| format!("send: {e}"))?;
        let mut answer = vec![0u8; 8];
        self.tls
            .read_exact(&mut answer)
            .map_err(|e| format!("receive: {e}"))?;
        let length = u32::from_be_bytes([answer[4], answer[5], answer[6], answer[7]]) as usize;
        answer.resize(8 + length, 0);
        self.tls
            .read_exact(&mut answer[8..])
            .map_err(|e| format!("receive: {e}"))?;
        let message =
            TTLV::from_bytes(&answer, self.flavor()).map_err(|e| format!("decode: {e}"))?;
        let item = find(&message, "BatchItem").ok_or("no Batch Item in the answer")?;
        match find(item, "ResultStatus").map(|s| &s.value) {
            Some(TTLValue::Enumeration(status)) if status.value == 0 => {
                find(item, "ResponsePayload")
                    .cloned()
                    .ok_or_else(|| "no Response Payload".to_owned())
            }
            _ => Err(format!(
                "Operation failed: {} (Result Reason {})",
                text(item, "ResultMessage").unwrap_or_default(),
                match find(item, "ResultReason").map(|r| &r.value) {
                    Some(TTLValue::Enumeration(reason)) => format!("{:#x}", reason.value),
                    _ => "none".to_owned(),
                }
            )),
        }
    }

    fn answered(&mut self, item: RequestMessageBatchItemVersioned) -> Result<Value, String> {
        self.call(item)
            .map(|payload| json!({ "id": text(&payload, "UniqueIdentifier") }))
    }

    fn get(&mut self, item: RequestMessageBatchItemVersioned) -> Result<Value, String> {
        let payload = self.call(item)?;
        match find(&payload, "KeyMaterial").map(|m| &m.value) {
            Some(TTLValue::ByteString(material)) => Ok(
                json!({"id": text(&payload, "UniqueIdentifier"), "key_hex": hex::encode(material)}),
            ),
            _ => Err("Get answered no raw Key Material".into()),
        }
    }
}

/// The first item of this tag, depth first.
fn find<'a>(ttlv: &'a TTLV, tag: &str) -> Option<&'a TTLV> {
    if ttlv.tag == tag {
        return Some(ttlv);
    }
    match &ttlv.value {
        TTLValue::Structure(items) => items.iter().find_map(|item| find(item, tag)),
        _ => None,
    }
}

fn text(ttlv: &TTLV, tag: &str) -> Option<String> {
    match &find(ttlv, tag)?.value {
        TTLValue::TextString(s) => Some(s.clone()),
        _ => None,
    }
}

fn all_texts(ttlv: &TTLV, tag: &str) -> Vec<String> {
    match &ttlv.value {
        TTLValue::TextString(s) if ttlv.tag == tag => vec![s.clone()],
        TTLValue::Structure(items) => items.iter().flat_map(|item| all_texts(item, tag)).collect(),
        _ => vec![],
    }
}

/// Create, Activate, Get, Locate; false as soon as a step fails.
pub fn start<D: Dialect>(agent: &Agent, address: &str, name: &str) -> bool {
    let mut peer = match Peer::connect(agent, address, D::VERSION) {
        Ok(peer) => peer,
        Err(e) => return report("connect", Err(e)),
    };
    let id = match peer.call(D::create(name)) {
        Ok(payload) => match text(&payload, "UniqueIdentifier") {
            Some(id) => id,
            None => return report("create", Err("Create answered no Unique Identifier".into())),
        },
        Err(e) => return report("create", Err(e)),
    };
    report("create", Ok(json!({ "id": id })))
        && report("activate", peer.answered(D::activate(&id)))
        && report("get", peer.get(D::get(&id)))
        && report(
            "locate",
            peer.call(D::locate(name))
                .map(|p| json!({ "ids": all_texts(&p, "UniqueIdentifier") })),
        )
}

/// Revoke, Destroy, then a Get that must fail.
pub fn retire<D: Dialect>(agent: &Agent, address: &str, id: &str) -> bool {
    let mut peer = match Peer::connect(agent, address, D::VERSION) {
        Ok(peer) => peer,
        Err(e) => return report("connect", Err(e)),
    };
    report("revoke", peer.answered(D::revoke(id)))
        && report("destroy", peer.answered(D::destroy(id)))
        && !report("get_after_destroy", peer.get(D::get(id)))
}
