// glue: filled in below
