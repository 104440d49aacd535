//! A vector with a free list: O(1) insert/remove, keys reused, deterministic.

#[derive(Debug)]
pub(crate) struct Slab<T> {
    items: Vec<Option<T>>,
    free: Vec<usize>,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab { items: Vec::new(), free: Vec::new() }
    }
}

impl<T> Slab<T> {
    pub(crate) fn insert(&mut self, value: T) -> usize {
        match self.free.pop() {
            Some(k) => {
                self.items[k] = Some(value);
                k
            }
            None => {
                self.items.push(Some(value));
                self.items.len() - 1
            }
        }
    }

    pub(crate) fn remove(&mut self, key: usize) -> T {
        let v = self.items[key].take().expect("slab key in use");
        self.free.push(key);
        v
    }

    pub(crate) fn get(&self, key: usize) -> &T {
        self.items[key].as_ref().expect("slab key in use")
    }

    pub(crate) fn get_mut(&mut self, key: usize) -> &mut T {
        self.items[key].as_mut().expect("slab key in use")
    }
}

/// Values keyed by small dense integer ids that someone else hands out (a [`Slab`]'s
/// keys): direct indexing instead of hashing, on the hot path of every message.
#[derive(Debug)]
pub(crate) struct IdTable<T> {
    items: Vec<Option<T>>,
}

impl<T> Default for IdTable<T> {
    fn default() -> Self {
        IdTable { items: Vec::new() }
    }
}

impl<T> IdTable<T> {
    pub(crate) fn get(&self, id: u64) -> Option<&T> {
        self.items.get(id as usize).and_then(Option::as_ref)
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        self.items.get_mut(id as usize).and_then(Option::as_mut)
    }

    /// The value at `id`, made by `make` if there is none.
    pub(crate) fn get_or_insert_with(&mut self, id: u64, make: impl FnOnce() -> T) -> &mut T {
        let i = id as usize;
        if i >= self.items.len() {
            self.items.resize_with(i + 1, || None);
        }
        self.items[i].get_or_insert_with(make)
    }

    pub(crate) fn remove(&mut self, id: u64) -> Option<T> {
        self.items.get_mut(id as usize).and_then(Option::take)
    }
}

impl<T> std::ops::Index<u64> for IdTable<T> {
    type Output = T;
    fn index(&self, id: u64) -> &T {
        self.get(id).expect("id in use")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slab_reuses_freed_keys_and_id_table_follows_them() {
        let mut slab = Slab::default();
        let mut table = IdTable::default();
        let (a, b) = (slab.insert('a') as u64, slab.insert('b') as u64);
        *table.get_or_insert_with(b, || 20) += 1;
        *table.get_or_insert_with(a, || 10) += 1;
        assert_eq!((table[a], table[b]), (11, 21));
        // An existing value is kept, not remade.
        assert_eq!(*table.get_or_insert_with(a, || 99), 11);
        assert_eq!(slab.remove(a as usize), 'a');
        assert_eq!(table.remove(a), Some(11));
        assert_eq!(table.get(a), None);
        assert_eq!(table.remove(a), None);
        // The freed key comes back for the next value, and the table starts it afresh.
        let c = slab.insert('c') as u64;
        assert_eq!(c, a);
        assert_eq!(*table.get_or_insert_with(c, || 30), 30);
        assert!(table.get(1_000).is_none() && table.get_mut(1_000).is_none());
    }
}
