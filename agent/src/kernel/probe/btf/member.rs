//! Finding a struct member's offset in parsed BTF, through anonymous struct and union
//! members and the typedefs and qualifiers in front of a member's type.

use anyhow::{Context as _, Result, bail, ensure};

use super::{
    Btf, CONST, ENUM, ENUM64, INT, PTR, RESTRICT, STRUCT, TYPE_TAG, TYPEDEF, Type, UNION, VOLATILE,
    u32_at,
};

impl Btf<'_> {
    /// Follows typedefs and qualifiers to the type that has a layout.
    fn resolve(&self, mut id: u32) -> Result<&Type> {
        // Bounded: a chain longer than this is a loop in a corrupt blob.
        for _ in 0..32 {
            let t = self.get(id)?;
            match t.kind {
                TYPEDEF | VOLATILE | CONST | RESTRICT | TYPE_TAG => id = t.size_or_id,
                _ => return Ok(t),
            }
        }
        bail!("BTF type chain too long")
    }

    /// (byte offset, byte size) of `member` in `struct strukt`, looking inside anonymous
    /// struct and union members.
    ///
    /// # Errors
    /// When the struct or the member is missing, or the member is a bitfield.
    pub(crate) fn member(&self, strukt: &str, member: &str) -> Result<(u32, u32)> {
        let s = self
            .types
            .iter()
            .find(|t| t.kind == STRUCT && self.name(t.name) == strukt.as_bytes())
            .with_context(|| format!("struct {strukt} not in the kernel's BTF"))?;
        let (bits, bitfield, t) = self
            .find(s, member.as_bytes())?
            .with_context(|| format!("struct {strukt} has no member {member}"))?;
        let size = match self.resolve(t)? {
            r if matches!(r.kind, INT | STRUCT | UNION | ENUM | ENUM64) => r.size_or_id,
            // The kernel's pointers are the agent's size: both run on this machine.
            r if r.kind == PTR => u32::try_from(size_of::<usize>())?,
            _ => bail!("{strukt}.{member} is not a plain value"),
        };
        // A bitfield is fine only when it fills its whole type, byte-aligned.
        ensure!(
            bits % 8 == 0 && (bitfield == 0 || bitfield == size * 8),
            "{strukt}.{member} is a bitfield"
        );
        Ok((bits / 8, size))
    }

    /// (bit offset, bitfield bits or 0, type id) of `name` in `s`, recursing into anonymous
    /// members.
    fn find(&self, s: &Type, name: &[u8]) -> Result<Option<(u32, u32, u32)>> {
        for i in 0..s.vlen {
            let at = s.data + i * 12;
            let (m_name, m_type) = (u32_at(self.raw, at)?, u32_at(self.raw, at + 4)?);
            let raw_off = u32_at(self.raw, at + 8)?;
            // kind_flag: the top byte is a bitfield's size, the rest its bit offset.
            let (bits, bitfield) = if s.kind_flag {
                (raw_off & 0x00ff_ffff, raw_off >> 24)
            } else {
                (raw_off, 0)
            };
            if m_name != 0 {
                if self.name(m_name) == name {
                    return Ok(Some((bits, bitfield, m_type)));
                }
                continue;
            }
            let inner = self.resolve(m_type)?;
            if matches!(inner.kind, STRUCT | UNION)
                && let Some((b, f, t)) = self.find(inner, name)?
            {
                return Ok(Some((bits + b, f, t)));
            }
        }
        Ok(None)
    }
}
