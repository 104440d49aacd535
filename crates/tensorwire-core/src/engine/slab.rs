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
