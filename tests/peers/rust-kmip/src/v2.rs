//! KMIP 2.0 and 2.1 requests, of cosmian_kmip's 2.1 types (2.0's operations and attributes used
//! here are the same).

use cosmian_kmip::{
    kmip_0::{
        kmip_messages::RequestMessageBatchItemVersioned,
        kmip_types::{CryptographicUsageMask, RevocationReason, RevocationReasonCode},
    },
    kmip_2_1::{
        kmip_attributes::Attributes,
        kmip_messages::RequestMessageBatchItem,
        kmip_objects::ObjectType,
        kmip_operations::{Activate, Create, Destroy, Get, Locate, Operation, Revoke},
        kmip_types::{CryptographicAlgorithm, Name, NameType, UniqueIdentifier},
    },
};

use crate::cosmian::Dialect;

pub struct V20;
pub struct V21;

fn item(operation: Operation) -> RequestMessageBatchItemVersioned {
    RequestMessageBatchItemVersioned::V21(RequestMessageBatchItem::new(operation))
}

fn uid(id: &str) -> UniqueIdentifier {
    UniqueIdentifier::TextString(id.to_owned())
}

fn named(name: &str) -> Option<Vec<Name>> {
    Some(vec![Name {
        name_value: name.to_owned(),
        name_type: NameType::UninterpretedTextString,
    }])
}

macro_rules! kmip_2 {
    ($dialect:ident, $minor:expr) => {
        impl Dialect for $dialect {
            const VERSION: (i32, i32) = (2, $minor);

            fn create(name: &str) -> RequestMessageBatchItemVersioned {
                let attributes = Attributes {
                    cryptographic_algorithm: Some(CryptographicAlgorithm::AES),
                    cryptographic_length: Some(256),
                    cryptographic_usage_mask: Some(
                        CryptographicUsageMask::Encrypt | CryptographicUsageMask::Decrypt,
                    ),
                    name: named(name),
                    ..Attributes::default()
                };
                item(Operation::Create(Create {
                    object_type: ObjectType::SymmetricKey,
                    attributes,
                    protection_storage_masks: None,
                }))
            }

            fn activate(id: &str) -> RequestMessageBatchItemVersioned {
                item(Operation::Activate(Activate {
                    unique_identifier: uid(id),
                }))
            }

            fn get(id: &str) -> RequestMessageBatchItemVersioned {
                item(Operation::Get(Get {
                    unique_identifier: Some(uid(id)),
                    ..Get::default()
                }))
            }

            fn locate(name: &str) -> RequestMessageBatchItemVersioned {
                let attributes = Attributes {
                    name: named(name),
                    ..Attributes::default()
                };
                item(Operation::Locate(Box::new(Locate {
                    attributes,
                    ..Locate::default()
                })))
            }

            fn revoke(id: &str) -> RequestMessageBatchItemVersioned {
                item(Operation::Revoke(Revoke {
                    unique_identifier: Some(uid(id)),
                    revocation_reason: RevocationReason {
                        revocation_reason_code: RevocationReasonCode::CessationOfOperation,
                        revocation_message: Some("tape retired".to_owned()),
                    },
                    compromise_occurrence_date: None,
                    cascade: false,
                }))
            }

            fn destroy(id: &str) -> RequestMessageBatchItemVersioned {
                item(Operation::Destroy(Destroy {
                    unique_identifier: Some(uid(id)),
                    remove: false,
                    cascade: false,
                    expected_object_type: None,
                }))
            }
        }
    };
}

kmip_2!(V20, 0);
kmip_2!(V21, 1);
