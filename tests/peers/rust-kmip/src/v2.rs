//! KMIP 2.x: requests are Cosmian's cosmian_kmip 2.1 operation types, encoded by its TTLV
//! serializer (the header names 2.0 or 2.1); answers are decoded by its TTLV decoder and read
//! by tag, so a field the KMA adds or leaves out is judged here, not by a typed mapping.

use std::{
    io::{Read, Write},
    net::TcpStream,
};

use cosmian_kmip::{
    kmip_0::{
        kmip_messages::{RequestMessage, RequestMessageBatchItemVersioned, RequestMessageHeader},
        kmip_types::{CryptographicUsageMask, ProtocolVersion, RevocationReason, RevocationReasonCode},
    },
    kmip_2_1::{
        kmip_attributes::Attributes,
        kmip_messages::RequestMessageBatchItem,
        kmip_objects::ObjectType,
        kmip_operations::{Activate, Create, Destroy, Get, Locate, Operation, Revoke},
        kmip_types::{CryptographicAlgorithm, Name, NameType, UniqueIdentifier},
    },
    ttlv::{to_ttlv, KmipFlavor, TTLValue, TTLV},
};
use openssl::ssl::SslStream;
use serde_json::{json, Value};

use crate::{report, Agent};

struct Peer {
    tls: SslStream<TcpStream>,
    minor: i32,
}

impl Peer {
    fn connect(agent: &Agent, address: &str, minor: i32) -> Result<Self, String> {
        let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
        let tcp = TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
        let tls = agent.connector()?.connect(host, tcp).map_err(|e| format!("TLS: {e}"))?;
        Ok(Self { tls, minor })
    }

    /// One operation in one message; the answer's payload, or the KMA's reason and message.
    fn call(&mut self, operation: Operation) -> Result<TTLV, String> {
        let request = RequestMessage {
            request_header: RequestMessageHeader {
                protocol_version: ProtocolVersion { protocol_version_major: 2, protocol_version_minor: self.minor },
                batch_count: 1,
                ..RequestMessageHeader::default()
            },
            batch_item: vec![RequestMessageBatchItemVersioned::V21(RequestMessageBatchItem::new(operation))],
        };
        let ttlv = to_ttlv(&request).map_err(|e| format!("encode: {e}"))?;
        let bytes = ttlv.to_bytes(KmipFlavor::Kmip2).map_err(|e| format!("encode: {e}"))?;
        self.tls.write_all(&bytes).map_err(|e| format!("send: {e}"))?;
        let mut answer = vec![0u8; 8];
        self.tls.read_exact(&mut answer).map_err(|e| format!("receive: {e}"))?;
        let length = u32::from_be_bytes([answer[4], answer[5], answer[6], answer[7]]) as usize;
        answer.resize(8 + length, 0);
        self.tls.read_exact(&mut answer[8..]).map_err(|e| format!("receive: {e}"))?;
        let message = TTLV::from_bytes(&answer, KmipFlavor::Kmip2).map_err(|e| format!("decode: {e}"))?;
        let item = find(&message, "BatchItem").ok_or("no Batch Item in the answer")?;
        match find(item, "ResultStatus").map(|s| &s.value) {
            Some(TTLValue::Enumeration(status)) if status.value == 0 => {
                find(item, "ResponsePayload").cloned().ok_or_else(|| "no Response Payload".to_owned())
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

fn uid(id: &str) -> Option<UniqueIdentifier> {
    Some(UniqueIdentifier::TextString(id.to_owned()))
}

fn named(name: &str) -> Option<Vec<Name>> {
    Some(vec![Name { name_value: name.to_owned(), name_type: NameType::UninterpretedTextString }])
}

fn create(peer: &mut Peer, name: &str) -> Result<String, String> {
    let attributes = Attributes {
        cryptographic_algorithm: Some(CryptographicAlgorithm::AES),
        cryptographic_length: Some(256),
        cryptographic_usage_mask: Some(CryptographicUsageMask::Encrypt | CryptographicUsageMask::Decrypt),
        name: named(name),
        ..Attributes::default()
    };
    let payload = peer.call(Operation::Create(Create {
        object_type: ObjectType::SymmetricKey,
        attributes,
        protection_storage_masks: None,
    }))?;
    text(&payload, "UniqueIdentifier").ok_or_else(|| "Create answered no Unique Identifier".into())
}

fn get(peer: &mut Peer, id: &str) -> Result<Value, String> {
    let payload = peer.call(Operation::Get(Get { unique_identifier: uid(id), ..Get::default() }))?;
    match find(&payload, "KeyMaterial").map(|m| &m.value) {
        Some(TTLValue::ByteString(material)) => {
            Ok(json!({"id": text(&payload, "UniqueIdentifier"), "key_hex": hex::encode(material)}))
        }
        _ => Err("Get answered no raw Key Material".into()),
    }
}

fn locate(peer: &mut Peer, name: &str) -> Result<Value, String> {
    let attributes = Attributes { name: named(name), ..Attributes::default() };
    let payload = peer.call(Operation::Locate(Box::new(Locate { attributes, ..Locate::default() })))?;
    Ok(json!({ "ids": all_texts(&payload, "UniqueIdentifier") }))
}

fn answered(payload: Result<TTLV, String>) -> Result<Value, String> {
    payload.map(|p| json!({ "id": text(&p, "UniqueIdentifier") }))
}

/// Create, Activate, Get, Locate; false as soon as a step fails.
pub fn start(agent: &Agent, address: &str, minor: i32, name: &str) -> bool {
    let mut peer = match Peer::connect(agent, address, minor) {
        Ok(peer) => peer,
        Err(e) => return report("connect", Err(e)),
    };
    let id = match create(&mut peer, name) {
        Ok(id) => id,
        Err(e) => return report("create", Err(e)),
    };
    report("create", Ok(json!({ "id": id })))
        && report("activate", answered(peer.call(Operation::Activate(Activate { unique_identifier: uid(&id).unwrap() }))))
        && report("get", get(&mut peer, &id))
        && report("locate", locate(&mut peer, name))
}

/// Revoke, Destroy, then a Get that must fail.
pub fn retire(agent: &Agent, address: &str, minor: i32, id: &str) -> bool {
    let mut peer = match Peer::connect(agent, address, minor) {
        Ok(peer) => peer,
        Err(e) => return report("connect", Err(e)),
    };
    let revoke = Revoke {
        unique_identifier: uid(id),
        revocation_reason: RevocationReason {
            revocation_reason_code: RevocationReasonCode::CessationOfOperation,
            revocation_message: Some("tape retired".to_owned()),
        },
        compromise_occurrence_date: None,
        cascade: false,
    };
    let destroy = Destroy { unique_identifier: uid(id), remove: false, cascade: false, expected_object_type: None };
    report("revoke", answered(peer.call(Operation::Revoke(revoke))))
        && report("destroy", answered(peer.call(Operation::Destroy(destroy))))
        && !report("get_after_destroy", get(&mut peer, id))
}
