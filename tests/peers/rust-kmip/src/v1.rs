//! KMIP 1.0 through NLnet Labs' kmip-protocol client, on a mutual-TLS stream of our own making.

use std::net::TcpStream;

use kmip_protocol::{
    client::{Client, ClientBuilder},
    types::{
        common::{CryptographicAlgorithm, CryptographicUsageMask, KeyMaterial, ObjectType},
        request::{Attribute, RequestPayload, TemplateAttribute},
        response::{ManagedObject, ResponsePayload},
    },
};
use openssl::ssl::SslStream;
use serde_json::{json, Value};

use crate::{report, Agent};

type Peer = Client<SslStream<TcpStream>>;

fn connect(agent: &Agent, address: &str) -> Result<Peer, String> {
    let host = address.rsplit_once(':').map_or(address, |(host, _)| host);
    let tcp = TcpStream::connect(address).map_err(|e| format!("connect {address}: {e}"))?;
    let tls = agent
        .connector()?
        .connect(host, tcp)
        .map_err(|e| format!("TLS: {e}"))?;
    Ok(ClientBuilder::new(tls).build())
}

fn create(client: &Peer, name: &str) -> Result<String, String> {
    let request = RequestPayload::Create(
        ObjectType::SymmetricKey,
        TemplateAttribute::unnamed(vec![
            Attribute::CryptographicAlgorithm(CryptographicAlgorithm::AES),
            Attribute::CryptographicLength(256),
            Attribute::CryptographicUsageMask(CryptographicUsageMask::Encrypt),
            Attribute::Name(name.to_owned()),
        ]),
    );
    match client.do_request(request).map_err(|e| e.to_string())? {
        ResponsePayload::Create(created) => Ok(created.unique_identifier.0),
        other => Err(format!("unexpected answer to Create: {other:?}")),
    }
}

fn get(client: &Peer, id: &str) -> Result<Value, String> {
    let got = client.get_key(id).map_err(|e| e.to_string())?;
    let ManagedObject::SymmetricKey(key) = got.cryptographic_object else {
        return Err(format!(
            "Get answered a {:?}, not a symmetric key",
            got.object_type
        ));
    };
    let KeyMaterial::Bytes(material) = key.key_block.key_value.key_material else {
        return Err("Get answered key material that is not raw bytes".into());
    };
    Ok(json!({"id": got.unique_identifier.0, "key_hex": hex::encode(material)}))
}

fn locate(client: &Peer, name: &str) -> Result<Value, String> {
    match client.do_request(RequestPayload::Locate(vec![Attribute::Name(
        name.to_owned(),
    )])) {
        Ok(ResponsePayload::Locate(found)) => {
            let ids: Vec<String> = found
                .unique_identifiers
                .into_iter()
                .map(|id| id.0)
                .collect();
            Ok(json!({ "ids": ids }))
        }
        Ok(other) => Err(format!("unexpected answer to Locate: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

/// Create, Activate, Get, Locate; false as soon as a step fails.
pub fn start(agent: &Agent, address: &str, name: &str) -> bool {
    let client = match connect(agent, address) {
        Ok(client) => client,
        Err(e) => return report("connect", Err(e)),
    };
    let id = match create(&client, name) {
        Ok(id) => id,
        Err(e) => return report("create", Err(e)),
    };
    report("create", Ok(json!({ "id": id })))
        && report(
            "activate",
            client
                .activate_key(&id)
                .map(|_| json!({ "id": id }))
                .map_err(|e| e.to_string()),
        )
        && report("get", get(&client, &id))
        && report("locate", locate(&client, name))
}

/// Revoke, Destroy, then a Get that must fail.
pub fn retire(agent: &Agent, address: &str, id: &str) -> bool {
    let client = match connect(agent, address) {
        Ok(client) => client,
        Err(e) => return report("connect", Err(e)),
    };
    let ok = |_| json!({ "id": id });
    report(
        "revoke",
        client.revoke_key(id).map(ok).map_err(|e| e.to_string()),
    ) && report(
        "destroy",
        client.destroy_key(id).map(ok).map_err(|e| e.to_string()),
    ) && !report("get_after_destroy", get(&client, id))
}
