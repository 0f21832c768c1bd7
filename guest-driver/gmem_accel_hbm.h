/* SPDX-License-Identifier: GPL-2.0 */
/*
 * gmem-accel driver: HBM as device memory (gmem_accel_hbm.c): its pages, 2 MiB chunks and
 * their owners.
 */
#ifndef GMEM_ACCEL_HBM_H
#define GMEM_ACCEL_HBM_H

#include "gmem_accel_types.h"

/* gmem_accel_hbm.c: HBM as device memory: its pages, chunks and owners */
int gmem_hbm_init(struct gmem_accel *g);
void gmem_hbm_fini(struct gmem_accel *g);
bool gmem_hbm_page(struct gmem_accel *g, struct page *page, u64 *offset);
void gmem_hbm_touch(struct gmem_accel *g, struct page *page);
void gmem_hbm_set_va(struct gmem_hbm *hbm, struct page *page, unsigned long nr, unsigned long va);
unsigned long gmem_hbm_va(struct gmem_hbm *hbm, unsigned long pfn);
struct page *gmem_hbm_take(struct gmem_accel *g);
struct page *gmem_hbm_take_huge(struct gmem_accel *g);
void gmem_hbm_poison(struct gmem_accel *g, struct page *page);
bool gmem_hbm_any_poisoned(struct gmem_accel *g, struct page *page, unsigned long nr);
bool gmem_hbm_poisoned(struct gmem_accel *g, struct page *page);
unsigned long gmem_chunk_pfn(struct gmem_hbm *hbm, struct gmem_chunk *c);
struct gmem_owner *gmem_page_owner_get(struct gmem_hbm *hbm, struct page *page,
				       unsigned long *nr);
struct gmem_accel *gmem_hbm_owner(struct page *page);
struct gmem_owner *gmem_owner_create(struct mm_struct *mm);
void gmem_owner_put(struct gmem_owner *owner);
void gmem_hbm_debugfs_show(struct gmem_accel *g, struct seq_file *m);
int gmem_hbm_obj_take(struct gmem_accel *g, unsigned int npages, u64 *off);
void gmem_hbm_obj_give(struct gmem_accel *g, u64 off, unsigned int npages);
u64 gmem_hbm_free_bytes(struct gmem_accel *g);
unsigned long gmem_hbm_free_pages(struct gmem_accel *g);
bool gmem_hbm_has_free_chunk(struct gmem_accel *g);

#endif /* GMEM_ACCEL_HBM_H */
