//! KMIP 1.4 requests, of cosmian_kmip's 1.4 types: attributes in Template-Attributes.

use cosmian_kmip::{
    kmip_0::{
        kmip_messages::RequestMessageBatchItemVersioned,
        kmip_types::{CryptographicUsageMask, RevocationReason, RevocationReasonCode},
    },
    kmip_1_4::{
        kmip_attributes::Attribute,
        kmip_data_structures::TemplateAttribute,
        kmip_messages::RequestMessageBatchItem,
        kmip_operations::{Activate, Create, Destroy, Get, Locate, Operation, Revoke},
        kmip_types::{CryptographicAlgorithm, Name, NameType, ObjectType},
    },
};

use crate::cosmian::Dialect;

pub struct V14;

fn item(operation: Operation) -> RequestMessageBatchItemVersioned {
    RequestMessageBatchItemVersioned::V14(RequestMessageBatchItem::new(operation))
}

fn named(name: &str) -> Attribute {
    Attribute::Name(Name {
        name_value: name.to_owned(),
        name_type: NameType::UninterpretedTextString,
    })
}

impl Dialect for V14 {
    const VERSION: (i32, i32) = (1, 4);

    fn create(name: &str) -> RequestMessageBatchItemVersioned {
        let attributes = vec![
            Attribute::CryptographicAlgorithm(CryptographicAlgorithm::AES),
            Attribute::CryptographicLength(256),
            Attribute::CryptographicUsageMask(
                CryptographicUsageMask::Encrypt | CryptographicUsageMask::Decrypt,
            ),
            named(name),
        ];
        item(Operation::Create(Create {
            object_type: ObjectType::SymmetricKey,
            template_attribute: TemplateAttribute {
                attribute: Some(attributes),
            },
        }))
    }

    fn activate(id: &str) -> RequestMessageBatchItemVersioned {
        item(Operation::Activate(Activate {
            unique_identifier: id.to_owned(),
        }))
    }

    fn get(id: &str) -> RequestMessageBatchItemVersioned {
        item(Operation::Get(Get {
            unique_identifier: Some(id.to_owned()),
            key_format_type: None,
            key_compression_type: None,
            key_wrapping_specification: None,
        }))
    }

    fn locate(name: &str) -> RequestMessageBatchItemVersioned {
        item(Operation::Locate(Locate {
            maximum_items: None,
            template_attribute: None,
            storage_status_mask: None,
            object_group_member: None,
            attribute: Some(vec![named(name)]),
        }))
    }

    fn revoke(id: &str) -> RequestMessageBatchItemVersioned {
        item(Operation::Revoke(Revoke {
            unique_identifier: Some(id.to_owned()),
            revocation_reason: RevocationReason {
                revocation_reason_code: RevocationReasonCode::CessationOfOperation,
                revocation_message: Some("tape retired".to_owned()),
            },
            compromise_occurrence_date: None,
        }))
    }

    fn destroy(id: &str) -> RequestMessageBatchItemVersioned {
        item(Operation::Destroy(Destroy {
            unique_identifier: id.to_owned(),
        }))
    }
}
