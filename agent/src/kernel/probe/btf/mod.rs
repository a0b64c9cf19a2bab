//! Byte offsets of kernel struct members, from the running kernel's BTF.
//!
//! Rust eBPF has no CO-RE field relocations, so a program that reads a kernel struct gets
//! its offsets from the agent at load time; aya's `Btf` keeps member offsets private, hence
//! this reader of the format (<https://github.com/torvalds/linux/blob/v6.18/include/uapi/linux/btf.h>,
//! `Documentation/bpf/btf.rst`): a header, then fixed 12-byte type records, each followed
//! by data whose size depends on its kind, and a string section.

use anyhow::{Context as _, Result, bail, ensure};

const MAGIC: u16 = 0xeb9f;
const HEADER: usize = 24;
const TYPE: usize = 12;

const INT: u32 = 1;
const PTR: u32 = 2;
const ARRAY: u32 = 3;
const STRUCT: u32 = 4;
const UNION: u32 = 5;
const ENUM: u32 = 6;
const FWD: u32 = 7;
const TYPEDEF: u32 = 8;
const VOLATILE: u32 = 9;
const CONST: u32 = 10;
const RESTRICT: u32 = 11;
const FUNC: u32 = 12;
const FUNC_PROTO: u32 = 13;
const VAR: u32 = 14;
const DATASEC: u32 = 15;
const FLOAT: u32 = 16;
const DECL_TAG: u32 = 17;
const TYPE_TAG: u32 = 18;
const ENUM64: u32 = 19;

/// One type record, with where its trailing data starts.
struct Type {
    name: u32,
    kind: u32,
    vlen: usize,
    /// Struct and union members' offsets carry a bitfield size in their top byte.
    kind_flag: bool,
    /// `size` or `type`, by kind.
    size_or_id: u32,
    data: usize,
}

/// A parsed BTF blob (`/sys/kernel/btf/vmlinux`, or a hand-built one in tests).
pub(super) struct Btf<'a> {
    raw: &'a [u8],
    strings: &'a [u8],
    /// Index `id - 1` (type 0 is `void`).
    types: Vec<Type>,
}

fn u32_at(raw: &[u8], at: usize) -> Result<u32> {
    let b = raw.get(at..at + 4).context("BTF truncated")?;
    Ok(u32::from_ne_bytes(b.try_into()?))
}

impl<'a> Btf<'a> {
    /// # Errors
    /// When the blob is not BTF of this machine's byte order, or is cut short.
    pub(super) fn parse(raw: &'a [u8]) -> Result<Self> {
        let magic = raw.get(..2).context("BTF truncated")?;
        ensure!(
            u16::from_ne_bytes(magic.try_into()?) == MAGIC,
            "not BTF of this machine's byte order"
        );
        let hdr = u32_at(raw, 4)? as usize;
        let field = |i: usize| u32_at(raw, 8 + 4 * i).map(|v| hdr + v as usize);
        let (type_off, type_end) = (field(0)?, field(0)? + u32_at(raw, 12)? as usize);
        let (str_off, str_end) = (field(2)?, field(2)? + u32_at(raw, 20)? as usize);
        ensure!(hdr >= HEADER, "BTF header of {hdr} bytes");
        let strings = raw.get(str_off..str_end).context("BTF strings truncated")?;
        let mut types = Vec::new();
        let mut at = type_off;
        while at < type_end {
            let info = u32_at(raw, at + 4)?;
            let t = Type {
                name: u32_at(raw, at)?,
                kind: (info >> 24) & 0x1f,
                vlen: (info & 0xffff) as usize,
                kind_flag: info >> 31 == 1,
                size_or_id: u32_at(raw, at + 8)?,
                data: at + TYPE,
            };
            at = t.data + data_len(&t)?;
            types.push(t);
        }
        ensure!(at == type_end, "BTF type section ends mid-record");
        Ok(Self {
            raw,
            strings,
            types,
        })
    }

    fn name(&self, off: u32) -> &[u8] {
        let s = self.strings.get(off as usize..).unwrap_or_default();
        &s[..s.iter().position(|b| *b == 0).unwrap_or(s.len())]
    }

    fn get(&self, id: u32) -> Result<&Type> {
        let i = (id as usize).checked_sub(1).context("BTF type 0 (void)")?;
        self.types
            .get(i)
            .with_context(|| format!("BTF type {id} missing"))
    }
}

/// Bytes of data after a type record of this kind.
fn data_len(t: &Type) -> Result<usize> {
    Ok(match t.kind {
        INT | VAR | DECL_TAG => 4,
        ARRAY => 12,
        STRUCT | UNION | DATASEC | ENUM64 => 12 * t.vlen,
        ENUM | FUNC_PROTO => 8 * t.vlen,
        PTR | FWD | TYPEDEF | VOLATILE | CONST | RESTRICT | FUNC | FLOAT | TYPE_TAG => 0,
        k => bail!("unknown BTF kind {k}"),
    })
}

mod member;
#[cfg(test)]
mod tests;
