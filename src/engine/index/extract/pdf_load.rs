//! Loading a PDF with lopdf, its object streams unpacked here, within bounds.
//!
//! lopdf unpacks an object stream (a stream holding other objects, usually compressed) whole
//! while loading. For an unencrypted file a load filter ran first and could measure it; for an
//! encrypted one lopdf runs no filter at all and decrypted and unpacked every object stream
//! unbounded (64 KB of compressed spaces became 64 MiB before any check, and chained filters
//! make gigabytes of a few KB). So lopdf never unpacks one here: the load filter holds each
//! back under another type, an encrypted file is loaded as lopdf loads any other (the newest
//! trailer's `/Encrypt` key renamed in a copy of the bytes, so lopdf parses its objects without
//! decrypting them and runs the filter) and is then decrypted here by lopdf's own decryption,
//! as lopdf would (the empty user password, or a note). Only then are the object streams
//! measured through their whole filter chain ([`decoded_size`]) and unpacked.

use super::pdf_bound::{decoded_size, mib, MAX_INFLATED_BYTES, MAX_STREAM_BYTES};
use super::pdf_scan::{trailer_key, TrailerKey};
use super::Refusal;
use pdf_extract::{
    encryption, xref::XrefEntry, Document, EncryptionState, LoadOptions, Object, ObjectId, ObjectStream,
};
use std::collections::BTreeMap;

/// The type an object stream is held under while lopdf loads (lopdf unpacks `/ObjStm` ones).
const HELD_TYPE: &[u8] = b"DocdexHeldObjStm";

/// Loads `bytes`, decrypting an encrypted file whose empty user password opens it and
/// unpacking object streams within the bounds; a file it cannot load is a refusal.
pub(super) fn load(bytes: &[u8]) -> Result<Document, Refusal> {
    let (copy, held) = match trailer_key(bytes, b"Encrypt") {
        TrailerKey::Absent => (None, None),
        TrailerKey::At(token) => {
            let mut copy = bytes.to_vec();
            let name = vec![b'X'; token.len() - 1]; // the same length, so no offset moves
            copy[token.start + 1..token.end].copy_from_slice(&name);
            (Some(copy), Some(name))
        }
        // lopdf may read a trailer this reader cannot, and would then decrypt and unpack the
        // object streams of an encrypted file itself, unbounded: such a file is not loaded.
        TrailerKey::Unreadable if memchr::memmem::find(bytes, b"Encrypt").is_some() => {
            return Err(Refusal::Corrupt("its trailer could not be read, and it may be encrypted".into()))
        }
        TrailerKey::Unreadable => (None, None),
    };
    let options = LoadOptions::with_filter(hold_object_stream);
    let mut doc = match Document::load_mem_with_options(copy.as_deref().unwrap_or(bytes), options) {
        Ok(d) => d,
        Err(_) if held.is_some() || memchr::memmem::find(bytes, b"/Encrypt").is_some() => {
            return Err(Refusal::Encrypted)
        }
        Err(e) => return Err(Refusal::Corrupt(e.to_string())),
    };
    if let Some(name) = held {
        decrypt(&mut doc, &name)?;
    }
    unpack(&mut doc)?;
    Ok(doc)
}

/// The load filter: an object stream is kept as a plain stream under [`HELD_TYPE`]. (lopdf
/// keeps the object it passed, edited in place, and only asks `Some` of the answer.)
fn hold_object_stream(id: ObjectId, object: &mut Object) -> Option<(ObjectId, Object)> {
    if let Ok(stream) = object.as_stream_mut() {
        if stream.dict.has_type(b"ObjStm") {
            stream.dict.set("Type", Object::Name(HELD_TYPE.to_vec()));
        }
    }
    Some((id, Object::Null))
}

/// Puts the trailer's encryption entry (loaded under `held`) back and decrypts every object as
/// lopdf's encrypted load does: with the empty password, else the file needs one.
fn decrypt(doc: &mut Document, held: &[u8]) -> Result<(), Refusal> {
    if !put_back(doc, held) {
        return Ok(());
    }
    // (An encryption dictionary written in the trailer itself, not by reference, is refused
    // here, as lopdf cannot decrypt with it either.)
    if doc.authenticate_password("").is_err() {
        return Err(Refusal::Encrypted);
    }
    let state = EncryptionState::decode(&*doc, "").map_err(|_| Refusal::Encrypted)?;
    let dictionary = doc.trailer.get(b"Encrypt").and_then(Object::as_reference).ok();
    for (id, object) in doc.objects.iter_mut() {
        if Some(*id) != dictionary {
            // An object that fails to decrypt stays as it was, as lopdf leaves it.
            let _ = encryption::decrypt_object(&state, *id, object);
        }
    }
    if let Some(id) = dictionary {
        doc.objects.remove(&id);
    }
    doc.trailer.remove(b"Encrypt");
    doc.encryption_state = Some(state);
    Ok(())
}

/// Renames the trailer's entry `held` back to `/Encrypt`, in the trailer and in the
/// cross-reference stream that holds it (an object too); whether the trailer had it.
fn put_back(doc: &mut Document, held: &[u8]) -> bool {
    let Some(entry) = doc.trailer.remove(held) else { return false };
    doc.trailer.set("Encrypt", entry);
    for object in doc.objects.values_mut() {
        if let Ok(stream) = object.as_stream_mut() {
            if let Some(entry) = stream.dict.remove(held) {
                stream.dict.set("Encrypt", entry);
            }
        }
    }
    true
}

/// Measures every held object stream, then unpacks them as lopdf does (an object the
/// cross-reference places in another stream is not taken from this one; an object also stored
/// in the file itself keeps that version). Over [`MAX_STREAM_BYTES`] one or
/// [`MAX_INFLATED_BYTES`] together refuses the file before any is unpacked.
fn unpack(doc: &mut Document) -> Result<(), Refusal> {
    let held: Vec<ObjectId> = doc
        .objects
        .iter()
        .filter(|(_, o)| o.as_stream().is_ok_and(|s| s.dict.has_type(HELD_TYPE)))
        .map(|(id, _)| *id)
        .collect();
    let mut total = 0u64;
    for id in &held {
        let Some(Ok(stream)) = doc.objects.get(id).map(Object::as_stream) else { continue };
        let size = decoded_size(stream, MAX_STREAM_BYTES + 1);
        if size > MAX_STREAM_BYTES {
            return Err(Refusal::TooLarge(format!("an object stream inflates to over {} MiB", mib(MAX_STREAM_BYTES))));
        }
        total = total.saturating_add(size);
        if total > MAX_INFLATED_BYTES {
            let why = format!("its object streams inflate to over {} MiB", mib(MAX_INFLATED_BYTES));
            return Err(Refusal::TooLarge(why));
        }
    }
    let placed: BTreeMap<u32, u32> = doc
        .reference_table
        .entries
        .iter()
        .filter_map(|(n, e)| match e {
            XrefEntry::Compressed { container, .. } => Some((*n, *container)),
            _ => None,
        })
        .collect();
    let mut unpacked = Vec::new();
    for id in held {
        let Some(Ok(stream)) = doc.objects.get_mut(&id).map(Object::as_stream_mut) else { continue };
        stream.dict.set("Type", Object::Name(b"ObjStm".to_vec()));
        let Ok(objects) = ObjectStream::new(stream) else { continue };
        let here = |n: &u32| placed.get(n).is_none_or(|c| *c == id.0);
        unpacked.extend(objects.objects.into_iter().filter(|((n, _), _)| here(n)));
    }
    for (id, object) in unpacked {
        doc.objects.entry(id).or_insert(object);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_trailer_naming_encrypt_is_not_handed_to_lopdf() {
        let file = |trailer: &str| {
            format!("%PDF-1.4\nxref\n0 1\n0000000000 65535 f \ntrailer\n{trailer}\nstartxref\n9\n%%EOF\n")
        };
        let Err(Refusal::Corrupt(why)) = load(file("<< /Size ! /Encrypt 3 0 R >>").as_bytes()) else {
            panic!("loaded")
        };
        assert!(why.contains("may be encrypted"), "{why}");
        let Err(Refusal::Corrupt(why)) = load(file("<< /Size ! >>").as_bytes()) else { panic!("loaded") };
        assert!(!why.contains("encrypted"), "lopdf's own error: {why}");
    }
}
