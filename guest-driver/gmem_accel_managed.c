// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: managed objects (GMEM_ACCEL_OBJ_MANAGED) and read duplication. A managed
 * object keeps a system page per device page always; an HBM copy comes and goes. Each device
 * page is in system memory (SYS), in HBM with a stale system page (HBM), or in both,
 * read-only on both sides (DUP, a read duplicate, for pages advised read-mostly). This file
 * owns those states: the device fault's decision (gmem_managed_device_prepare()), the CPU's
 * faults and first writes (vm_ops), HBM copies giving way under pressure, the advice, unbind.
 *
 * No write is lost because every change of state first takes away the mappings that could
 * write the old copy: unmap_mapping_range() on the device page's range of the device's
 * address_space removes every process's CPU entries and, through each process's MMU
 * notifiers, every context's device entries; then the copy, then the new state, all under
 * obj->lock, which the CPU's and the device's faults take before they map.
 */
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_queue.h"
#include "gmem_accel_hbm.h"
#include "gmem_accel_obj.h"
#include "gmem_accel_advice.h"
#include "gmem_accel_trace.h"

int gmem_managed_init(struct gmem_obj *obj)
{
	obj->mstate = kvcalloc(obj->npages, sizeof(*obj->mstate), GFP_KERNEL);
	obj->hbm = kvcalloc(obj->npages, sizeof(*obj->hbm), GFP_KERNEL);
	obj->read_mostly = kvcalloc(BITS_TO_LONGS(obj->npages), sizeof(long), GFP_KERNEL);
	return obj->mstate && obj->hbm && obj->read_mostly ? 0 : -ENOMEM;
}

/* The object goes (no mapping is left): its HBM copies go back. */
void gmem_managed_fini(struct gmem_obj *obj)
{
	for (unsigned long i = 0; obj->mstate && i < obj->npages; i++) {
		if (obj->mstate[i] == GMEM_MANAGED_SYS)
			continue;
		if (obj->mstate[i] == GMEM_MANAGED_DUP)
			gmem_dev_count(obj->g, GMEM_DEV_READDUP_PAGES_NOW, -1);
		gmem_hbm_obj_give(obj->g, obj->hbm[i], obj->page_size >> PAGE_SHIFT);
	}
	kvfree(obj->mstate);
	kvfree(obj->hbm);
	kvfree(obj->read_mostly);
	obj->mstate = NULL;
	obj->hbm = NULL;
	obj->read_mostly = NULL;
}

/*
 * Take every mapping of device page @i away: CPU entries of every process, and through their
 * MMU notifiers every context's device entries. Called with obj->lock held.
 */
static void gmem_managed_zap(struct gmem_obj *obj, unsigned long i)
{
	lockdep_assert_held(&obj->lock);
	unmap_mapping_range(obj->g->obj_inode->i_mapping,
			    gmem_obj_mmap_offset(obj) + i * obj->page_size, obj->page_size, 1);
}

/* Copy device page @i between its system page and its HBM copy, with the DMA engine. */
static int gmem_managed_copy(struct gmem_obj *obj, unsigned long i, bool to_hbm)
{
	struct gmem_cmd_desc desc = {
		.opcode = GMEM_OP_COPY,
		.flags = to_hbm ? GMEM_CMD_F_DST(GMEM_ADDR_HBM) | GMEM_CMD_F_SRC(GMEM_ADDR_SYS) :
				  GMEM_CMD_F_DST(GMEM_ADDR_SYS) | GMEM_CMD_F_SRC(GMEM_ADDR_HBM),
		.dst = cpu_to_le64(to_hbm ? obj->hbm[i] : obj->addr[i]),
		.src = cpu_to_le64(to_hbm ? obj->addr[i] : obj->hbm[i]),
		.size = cpu_to_le64(obj->page_size),
	};

	return gmem_kernel_run(obj->g, &desc, 1);
}

/* Page @i has an HBM copy no more: it gives the HBM back. Its mappings are gone already. */
static void gmem_managed_drop(struct gmem_obj *obj, unsigned long i)
{
	if (obj->mstate[i] == GMEM_MANAGED_DUP)
		gmem_dev_count(obj->g, GMEM_DEV_READDUP_PAGES_NOW, -1);
	gmem_hbm_obj_give(obj->g, obj->hbm[i], obj->page_size >> PAGE_SHIFT);
	obj->mstate[i] = GMEM_MANAGED_SYS;
	WRITE_ONCE(obj->nhbm, obj->nhbm - 1);	/* (eviction looks without the lock) */
}

/*
 * Bring device page @i home (HBM or DUP -> SYS), or with @dup make an HBM page a read duplicate
 * (HBM -> DUP). @ctx/@va: who asks (-1, 0: the CPU or the driver), for the trace. 0 or the
 * copy's errno (the page stays as it was). Called with obj->lock held.
 */
static int gmem_managed_home(struct gmem_obj *obj, unsigned long i, bool dup, int ctx, u64 va)
{
	u64 off = i * obj->page_size;
	int ret;

	lockdep_assert_held(&obj->lock);
	if (obj->mstate[i] == GMEM_MANAGED_SYS)
		return 0;
	if (obj->mstate[i] == GMEM_MANAGED_DUP) {
		if (dup)
			return 0;
		gmem_managed_zap(obj, i);
		gmem_managed_drop(obj, i);
		gmem_dev_count(obj->g, GMEM_DEV_READDUP_COLLAPSE_CPU, 1);
		trace_gmem_accel_readdup_collapse(ctx, va, obj->id, off, false);
		return 0;
	}
	gmem_managed_zap(obj, i);	/* no writer of the HBM copy is left */
	ret = gmem_managed_copy(obj, i, false);
	if (ret)
		return ret;
	gmem_dev_count(obj->g, GMEM_DEV_MANAGED_TO_SYS, 1);
	if (dup) {
		obj->mstate[i] = GMEM_MANAGED_DUP;
		gmem_dev_count(obj->g, GMEM_DEV_READDUP_COPIES, 1);
		gmem_dev_count(obj->g, GMEM_DEV_READDUP_PAGES_NOW, 1);
		trace_gmem_accel_readdup_dup(ctx, va, obj->id, off, false);
	} else {
		gmem_managed_drop(obj, i);
	}
	return 0;
}

/*
 * Move device page @i, in system memory, to the HBM at @hbm: a read duplicate with @dup, else
 * its only copy. 0 or the copy's errno (the page stays in system memory; the caller keeps
 * @hbm). Called with obj->lock held.
 */
static int gmem_managed_in(struct gmem_obj *obj, unsigned long i, u64 hbm, bool dup, int ctx,
			   u64 va)
{
	int ret;

	lockdep_assert_held(&obj->lock);
	gmem_managed_zap(obj, i);	/* no writer of the system page is left */
	obj->hbm[i] = hbm;
	ret = gmem_managed_copy(obj, i, true);
	if (ret)
		return ret;
	WRITE_ONCE(obj->nhbm, obj->nhbm + 1);
	obj->mstate[i] = dup ? GMEM_MANAGED_DUP : GMEM_MANAGED_HBM;
	if (dup) {
		gmem_dev_count(obj->g, GMEM_DEV_READDUP_COPIES, 1);
		gmem_dev_count(obj->g, GMEM_DEV_READDUP_PAGES_NOW, 1);
		trace_gmem_accel_readdup_dup(ctx, va, obj->id, i * obj->page_size, true);
	} else {
		gmem_dev_count(obj->g, GMEM_DEV_MANAGED_TO_HBM, 1);
	}
	return 0;
}

/* What a device fault on device page @i wants of it. */
enum gmem_managed_want { GMEM_WANT_AS_IS, GMEM_WANT_DUP, GMEM_WANT_HBM, GMEM_WANT_SYS };

/*
 * The policy, as UVM has it for managed memory: a read of a read-mostly page gets a copy of
 * its own in HBM (read duplication comes before the preferred location); any other access
 * migrates the page to HBM at first touch, unless the range prefers system memory, where the
 * device maps it remotely (a write then collapses a duplicate to system memory).
 */
static enum gmem_managed_want gmem_managed_want(struct gmem_obj *obj, unsigned long i,
						bool write, bool prefer_sys)
{
	bool rm = test_bit(i, obj->read_mostly);

	switch (obj->mstate[i]) {
	case GMEM_MANAGED_HBM:
		return GMEM_WANT_AS_IS;
	case GMEM_MANAGED_DUP:
		if (!write)
			return GMEM_WANT_AS_IS;
		return prefer_sys ? GMEM_WANT_SYS : GMEM_WANT_HBM;
	}
	if (!write && rm)
		return GMEM_WANT_DUP;
	return prefer_sys ? GMEM_WANT_AS_IS : GMEM_WANT_HBM;
}

/*
 * A device fault of context @ctx at @va (@write: it writes), before gmem_obj_fault() maps it:
 * if @va is in a mapping of a managed object of this device, move its device page as the
 * policy says (gmem_managed_want()). Best effort: a page that cannot move (no HBM even after
 * eviction, a failed copy, the device going) stays where it is and is mapped there; the
 * command never fails for it. Called with no lock held.
 */
void gmem_managed_device_prepare(struct gmem_ctx *ctx, u64 va, bool write)
{
	struct gmem_accel *g = ctx->g;
	bool spare = false, prefer_sys;
	struct vm_area_struct *vma;
	struct gmem_obj *obj;
	unsigned long i;
	u64 hbm = 0;

	if (!g->hbm.mapped)
		return;
	mmap_read_lock(ctx->mm);
	vma = vma_lookup(ctx->mm, va);
	if (!vma || vma->vm_ops != &gmem_managed_vm_ops ||
	    ((struct gmem_obj *)vma->vm_private_data)->g != g || !(vma->vm_flags & VM_READ) ||
	    (write && !(vma->vm_flags & VM_WRITE))) {
		mmap_read_unlock(ctx->mm);
		return;		/* not managed here, or the mapping step fails the access */
	}
	obj = vma->vm_private_data;
	kref_get(&obj->ref);
	i = gmem_obj_offset(vma, va) / obj->page_size;
	mmap_read_unlock(ctx->mm);
	prefer_sys = gmem_prefers_system(ctx, va);

	for (unsigned int tries = 0; tries < 4 && !READ_ONCE(g->unbinding); tries++) {
		enum gmem_managed_want want;

		mutex_lock(&obj->lock);
		want = gmem_managed_want(obj, i, write, prefer_sys);
		if ((want == GMEM_WANT_DUP || want == GMEM_WANT_HBM) &&
		    obj->mstate[i] == GMEM_MANAGED_SYS && !spare) {
			mutex_unlock(&obj->lock);
			/* HBM first, with nothing held: making room may evict. */
			if (gmem_obj_hbm_take(g, obj->page_size >> PAGE_SHIFT, &hbm, obj))
				break;		/* none: the device reaches system memory */
			spare = true;
			continue;
		}
		switch (want) {
		case GMEM_WANT_AS_IS:
			break;
		case GMEM_WANT_SYS:
			gmem_managed_home(obj, i, false, ctx->id, va);
			break;
		case GMEM_WANT_DUP:
		case GMEM_WANT_HBM:
			if (obj->mstate[i] == GMEM_MANAGED_DUP) {	/* collapse to the device */
				gmem_managed_zap(obj, i);
				obj->mstate[i] = GMEM_MANAGED_HBM;
				gmem_dev_count(g, GMEM_DEV_READDUP_PAGES_NOW, -1);
				gmem_dev_count(g, GMEM_DEV_READDUP_COLLAPSE_DEVICE, 1);
				trace_gmem_accel_readdup_collapse(ctx->id, va, obj->id,
								  i * obj->page_size, true);
			} else if (!gmem_managed_in(obj, i, hbm, want == GMEM_WANT_DUP, ctx->id,
						    va)) {
				spare = false;
			}
			break;
		}
		mutex_unlock(&obj->lock);
		break;
	}
	if (spare)
		gmem_hbm_obj_give(g, hbm, obj->page_size >> PAGE_SHIFT);
	gmem_obj_put(obj);
}

/*
 * Where a device fault maps byte @off of managed object @obj: the bus address of its device
 * page (*@hbm: an HBM offset), *@wr false for a read duplicate (*@dup). Called with obj->lock
 * held.
 */
u64 gmem_managed_target(struct gmem_obj *obj, u64 off, bool *hbm, bool *wr, bool *dup)
{
	unsigned long i = off / obj->page_size;

	lockdep_assert_held(&obj->lock);
	*hbm = obj->mstate[i] != GMEM_MANAGED_SYS;
	*dup = obj->mstate[i] == GMEM_MANAGED_DUP;
	*wr = !*dup;
	return *hbm ? obj->hbm[i] : obj->addr[i];
}

/* ---- CPU mappings ---- */

/*
 * Map the system pages of device page @i inside @vma, around the fault: writable (as the VMA
 * is) unless the page is a read duplicate. The VMA's own protection is read-only where it is
 * writable (pfn_mkwrite asks for write notification), so a writable one is asked for.
 */
static vm_fault_t gmem_managed_insert(struct vm_fault *vmf, struct gmem_obj *obj,
				      unsigned long i)
{
	struct vm_area_struct *vma = vmf->vma;
	u64 addr = vmf->address & PAGE_MASK;
	u64 unit = addr - gmem_obj_offset(vma, addr) % obj->page_size;
	u64 first = max_t(u64, unit, vma->vm_start);
	u64 last = min_t(u64, unit + obj->page_size, vma->vm_end);
	pgprot_t prot = obj->mstate[i] == GMEM_MANAGED_DUP ? vma->vm_page_prot :
			vm_get_page_prot(vma->vm_flags);
	vm_fault_t ret = VM_FAULT_NOPAGE;

	for (u64 va = first; va < last && !(ret & VM_FAULT_ERROR); va += PAGE_SIZE) {
		u64 off = gmem_obj_offset(vma, va);

		ret = vmf_insert_pfn_prot(vma, va, page_to_pfn(obj->pages[i]) +
					  ((off % obj->page_size) >> PAGE_SHIFT), prot);
	}
	return ret & VM_FAULT_ERROR ? ret : VM_FAULT_NOPAGE;
}

/*
 * A CPU fault: a page in HBM comes home (a read of a read-mostly one keeps its HBM copy: a
 * read duplicate), a write to a read duplicate collapses it to system memory; then its system
 * pages are mapped.
 */
static vm_fault_t gmem_managed_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct gmem_obj *obj = vma->vm_private_data;
	unsigned long i = gmem_obj_offset(vma, vmf->address & PAGE_MASK) / obj->page_size;
	bool write = vmf->flags & FAULT_FLAG_WRITE;
	vm_fault_t ret;

	mutex_lock(&obj->lock);
	if (gmem_managed_home(obj, i, !write && test_bit(i, obj->read_mostly), -1,
			      vmf->address)) {
		mutex_unlock(&obj->lock);
		return VM_FAULT_SIGBUS;		/* its only copy is in HBM and the copy failed */
	}
	ret = gmem_managed_insert(vmf, obj, i);
	mutex_unlock(&obj->lock);
	return ret;
}

/*
 * The CPU's first write through a read-only entry of a read duplicate: collapse it to system
 * memory (every mapping gone, this one too) and map the system page writable. A system page
 * whose entry is read-only (mprotect) just becomes writable.
 */
static vm_fault_t gmem_managed_pfn_mkwrite(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct gmem_obj *obj = vma->vm_private_data;
	unsigned long i = gmem_obj_offset(vma, vmf->address & PAGE_MASK) / obj->page_size;
	vm_fault_t ret = 0;

	mutex_lock(&obj->lock);
	/*
	 * The writable entry is made here, under the lock the device's faults take: left to a
	 * second fault, a device read in between would duplicate the page again, and a device
	 * reading in a loop would starve the CPU's write.
	 */
	if (obj->mstate[i] != GMEM_MANAGED_SYS)
		ret = gmem_managed_home(obj, i, false, -1, vmf->address) ? VM_FAULT_SIGBUS :
			gmem_managed_insert(vmf, obj, i);
	mutex_unlock(&obj->lock);
	return ret;
}

const struct vm_operations_struct gmem_managed_vm_ops = {
	.open = gmem_obj_vm_open,
	.close = gmem_obj_vm_close,
	.fault = gmem_managed_vm_fault,
	.pfn_mkwrite = gmem_managed_pfn_mkwrite,
};

/* ---- HBM pressure, unbind ---- */

/* Every HBM copy of @obj goes (home first where it is the only copy); how many went. */
static unsigned long gmem_managed_evict(struct gmem_obj *obj)
{
	unsigned long n = 0;

	mutex_lock(&obj->lock);
	for (unsigned long i = 0; i < obj->npages && obj->nhbm; i++) {
		if (obj->mstate[i] == GMEM_MANAGED_SYS || gmem_managed_home(obj, i, false, -1, 0))
			continue;
		n++;
	}
	mutex_unlock(&obj->lock);
	gmem_dev_count(obj->g, GMEM_DEV_MANAGED_EVICTIONS, n);
	return n;
}

/*
 * A managed object of @g with HBM copies, not @mine, the one that had them longest,
 * referenced.
 */
static struct gmem_obj *gmem_managed_next(struct gmem_accel *g, struct gmem_obj *mine)
{
	struct gmem_obj *obj, *found = NULL;

	mutex_lock(&g->obj_lock);
	list_for_each_entry(obj, &g->objs, link) {
		if (obj != mine && gmem_obj_is_managed(obj) && READ_ONCE(obj->nhbm) &&
		    kref_get_unless_zero(&obj->ref)) {
			found = obj;
			/* next time, the next one */
			list_move_tail(&obj->link, &g->objs);
			break;
		}
	}
	mutex_unlock(&g->obj_lock);
	return found;
}

/*
 * Make room in HBM: the HBM copies of the managed object that had them longest go (read
 * duplicates are dropped, HBM pages copied home), unless it is @mine (a managed object's own
 * pages do not push each other out: one command's pages would take turns). True if any
 * went. With no lock held.
 */
bool gmem_managed_evict_one(struct gmem_accel *g, struct gmem_obj *mine)
{
	struct gmem_obj *obj = gmem_managed_next(g, mine);
	unsigned long n;

	if (!obj)
		return false;
	n = gmem_managed_evict(obj);
	gmem_obj_put(obj);
	return n;
}

/*
 * Device @g goes (its contexts are shut down; queue 0 still copies): every managed page comes
 * home, so that nothing of the objects, which outlive the device, stays in its HBM.
 */
void gmem_managed_dev_unbind(struct gmem_accel *g)
{
	struct gmem_obj *obj;

	for (unsigned int tries = 0; tries < 1024 && (obj = gmem_managed_next(g, NULL)); tries++) {
		gmem_managed_evict(obj);
		gmem_obj_put(obj);
	}
}

/* ---- advice ---- */

/*
 * Is [start, end) of @ctx's process wholly in mappings of managed objects of its device?
 * 0, or -EOPNOTSUPP. Called with the mmap lock held.
 */
static int gmem_managed_covers(struct gmem_ctx *ctx, u64 start, u64 end)
{
	struct vm_area_struct *vma;
	u64 addr = start;

	mmap_assert_locked(ctx->mm);
	while (addr < end) {
		vma = vma_lookup(ctx->mm, addr);
		if (!vma || vma->vm_ops != &gmem_managed_vm_ops ||
		    ((struct gmem_obj *)vma->vm_private_data)->g != ctx->g)
			return -EOPNOTSUPP;
		addr = vma->vm_end;
	}
	return 0;
}

int gmem_managed_check(struct gmem_ctx *ctx, u64 start, u64 end)
{
	int ret;

	if (!mmget_not_zero(ctx->mm))
		return -EOPNOTSUPP;
	mmap_read_lock(ctx->mm);
	ret = gmem_managed_covers(ctx, start, end);
	mmap_read_unlock(ctx->mm);
	mmput(ctx->mm);
	return ret;
}

/*
 * Apply ADVISE's @flags (GMEM_ACCEL_ADVISE_*) and @location to the managed device pages of
 * [start, end) (each one a byte of the range touches): set or clear read-mostly (clearing it
 * collapses duplicates home); PREFER_SYSTEM brings HBM pages home (duplicates stay: reads come
 * before the location). Managed mappings in a range that also holds other memory get the
 * location too (read-mostly was refused for such a range before). 1 if the range was all
 * managed, 0 if not, -errno if a page could not come home.
 */
int gmem_managed_advise(struct gmem_ctx *ctx, u64 start, u64 end, u32 flags, u32 location)
{
	bool home = !(flags & GMEM_ACCEL_ADVISE_KEEP_LOCATION) &&
		    location == GMEM_ACCEL_PREFER_SYSTEM;
	VMA_ITERATOR(vmi, ctx->mm, start);
	struct vm_area_struct *vma;
	int ret = 0;

	if (!mmget_not_zero(ctx->mm))
		return 0;
	mmap_read_lock(ctx->mm);
	for_each_vma_range(vmi, vma, end) {
		u64 addr = max_t(u64, start, vma->vm_start), stop = min_t(u64, end, vma->vm_end);
		struct gmem_obj *obj = vma->vm_private_data;
		unsigned long first, last;

		if (vma->vm_ops != &gmem_managed_vm_ops || obj->g != ctx->g)
			continue;
		first = gmem_obj_offset(vma, addr) / obj->page_size;
		last = (gmem_obj_offset(vma, stop) - 1) / obj->page_size;
		mutex_lock(&obj->lock);
		for (unsigned long i = first; i <= last && !ret; i++) {
			if (flags & GMEM_ACCEL_ADVISE_READ_MOSTLY)
				set_bit(i, obj->read_mostly);
			if (flags & GMEM_ACCEL_ADVISE_NOT_READ_MOSTLY) {
				clear_bit(i, obj->read_mostly);
				if (obj->mstate[i] == GMEM_MANAGED_DUP &&
				    gmem_managed_home(obj, i, false, ctx->id, 0))
					ret = -EIO;
			}
			if (home && obj->mstate[i] == GMEM_MANAGED_HBM &&
			    gmem_managed_home(obj, i, false, ctx->id, 0))
				ret = -EIO;
		}
		mutex_unlock(&obj->lock);
		if (ret)
			break;
	}
	if (!ret)
		ret = !gmem_managed_covers(ctx, start, end);
	mmap_read_unlock(ctx->mm);
	mmput(ctx->mm);
	return ret;
}
