// SPDX-License-Identifier: GPL-2.0
/*
 * gmem-accel driver: the mappings of device memory objects. CPU mappings are VM_PFNMAP:
 * HBM through BAR2, write-combined; system memory as its own pages. Every CPU mapping of a
 * device's objects lives in one address_space, its inode's on a pseudo filesystem, so that
 * an eviction or unbind takes them away with unmap_mapping_range(). A device fault in an
 * object's mapping maps the object's pages into the context's device page table with one
 * leaf per device page (gmem_obj_fault()); the MMU notifier zaps them as any memory.
 */
#include <linux/fs_context.h>
#include <linux/mm.h>
#include <linux/mman.h>
#include <linux/mount.h>
#include <linux/pseudo_fs.h>
#include <linux/sched/mm.h>

#include "gmem_accel.h"
#include "gmem_accel_ctx.h"
#include "gmem_accel_pt.h"
#include "gmem_accel_obj.h"

/*
 * A pseudo filesystem for one inode per device, whose address_space holds every CPU mapping
 * of the device's objects: eviction unmaps an object from all processes at once with
 * unmap_mapping_range(), as DRM does with its anonymous inode.
 */
static int gmem_fs_cnt;
static struct vfsmount *gmem_fs_mnt;

static int gmem_fs_init_fs_context(struct fs_context *fc)
{
	return init_pseudo(fc, 0x676d656d) ? 0 : -ENOMEM;
}

/*
 * No .owner: the mount would pin the module while a device is bound, and rmmod would fail.
 * The mount goes with the last device (gmem_obj_dev_fini()), which files, mappings and
 * dma-bufs keep, and those pin the module themselves.
 */
static struct file_system_type gmem_fs_type = {
	.name = GMEM_ACCEL_NAME,
	.init_fs_context = gmem_fs_init_fs_context,
	.kill_sb = kill_anon_super,
};

int gmem_obj_dev_init(struct gmem_accel *g)
{
	struct inode *inode;
	int ret = simple_pin_fs(&gmem_fs_type, &gmem_fs_mnt, &gmem_fs_cnt);

	if (ret)
		return ret;
	inode = alloc_anon_inode(gmem_fs_mnt->mnt_sb);
	if (IS_ERR(inode)) {
		simple_release_fs(&gmem_fs_mnt, &gmem_fs_cnt);
		return PTR_ERR(inode);
	}
	g->obj_inode = inode;
	return 0;
}

static int gmem_obj_zap_mappings(struct device *dev, void *unused)
{
	struct gmem_accel *g = to_gmem_accel(dev);

	if (g->obj_inode)
		unmap_mapping_range(g->obj_inode->i_mapping, 0, 0, 1);
	return 0;
}

/*
 * Device @g is being unbound (g->unbinding set): its HBM is about to be no one's, though BAR2
 * still answers. Take every CPU mapping of objects away, on every gmem-accel device (a peer
 * maps @g's objects through its own file), so that no page-table entry, the CPU's or,
 * through the MMU notifiers, a device's, still reaches it: the next CPU touch of an HBM
 * object of @g gets SIGBUS, a peer's device fault EFAULT (gmem_obj_fault()), and the
 * others refault as before.
 */
void gmem_obj_dev_unbind(struct gmem_accel *g)
{
	gmem_walk_devices(NULL, gmem_obj_zap_mappings);
}

/* The device's last reference is gone: no file, mapping or object refers to it. */
void gmem_obj_dev_fini(struct gmem_accel *g)
{
	if (!g->obj_inode)
		return;
	iput(g->obj_inode);
	g->obj_inode = NULL;
	simple_release_fs(&gmem_fs_mnt, &gmem_fs_cnt);
}

/* ---- CPU mappings ---- */

/* The bus address of the object's byte @off: HBM offset or system memory's DMA address. */
static u64 gmem_obj_target(const struct gmem_obj *obj, u64 off)
{
	return obj->addr[off / obj->page_size] + off % obj->page_size;
}

static unsigned long gmem_obj_pfn(const struct gmem_obj *obj, u64 off)
{
	if (gmem_obj_in_hbm(obj))
		return (obj->g->hbm_bar + gmem_obj_target(obj, off)) >> PAGE_SHIFT;
	return page_to_pfn(obj->pages[off / obj->page_size]) +
	       ((off % obj->page_size) >> PAGE_SHIFT);
}

/* A CPU fault maps the whole device page around it (inside the VMA), as the device does. */
static vm_fault_t gmem_obj_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct gmem_obj *obj = vma->vm_private_data;
	u64 addr = vmf->address & PAGE_MASK;
	u64 unit = addr - gmem_obj_offset(vma, addr) % obj->page_size;
	u64 first = max_t(u64, unit, vma->vm_start);
	u64 last = min_t(u64, unit + obj->page_size, vma->vm_end);
	vm_fault_t ret = VM_FAULT_NOPAGE;

	mutex_lock(&obj->lock);		/* an eviction moves it meanwhile */
	if (gmem_obj_in_hbm(obj) && (READ_ONCE(obj->g->unbinding) || !READ_ONCE(obj->g->pdev)))
		ret = VM_FAULT_SIGBUS;		/* BAR2 is gone with the device */
	for (u64 va = first; va < last && !(ret & VM_FAULT_ERROR); va += PAGE_SIZE)
		ret = vmf_insert_pfn(vma, va, gmem_obj_pfn(obj, gmem_obj_offset(vma, va)));
	mutex_unlock(&obj->lock);
	return ret & VM_FAULT_ERROR ? ret : VM_FAULT_NOPAGE;
}

/* A VMA copied (fork) or split off (partial munmap, mprotect) refers to the object too. */
void gmem_obj_vm_open(struct vm_area_struct *vma)
{
	kref_get(&((struct gmem_obj *)vma->vm_private_data)->ref);
}

void gmem_obj_vm_close(struct vm_area_struct *vma)
{
	gmem_obj_put(vma->vm_private_data);
}

static const struct vm_operations_struct gmem_obj_vm_ops = {
	.open = gmem_obj_vm_open,
	.close = gmem_obj_vm_close,
	.fault = gmem_obj_vm_fault,
};

/* Is @vma a mapping of an object (of any device)? */
bool gmem_obj_vma(const struct vm_area_struct *vma)
{
	return vma->vm_ops == &gmem_obj_vm_ops || vma->vm_ops == &gmem_managed_vm_ops;
}

/* Make @vma (shared, inside the object) a mapping of @obj; takes over a reference. */
static void gmem_obj_map_vma(struct gmem_obj *obj, struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	if (gmem_obj_in_hbm(obj))
		vma->vm_page_prot = pgprot_writecombine(vma->vm_page_prot);
	vma->vm_private_data = obj;
	vma->vm_ops = gmem_obj_is_managed(obj) ? &gmem_managed_vm_ops : &gmem_obj_vm_ops;
}

/*
 * Map @obj with @vma (shared, inside the object; its offset in vm_pgoff as
 * gmem_obj_mmap_offset() gives it): takes over the caller's reference, which it drops on
 * failure.
 */
int gmem_obj_mmap_obj(struct gmem_obj *obj, struct vm_area_struct *vma)
{
	u64 first = vma->vm_pgoff & GMEM_OBJ_PGOFF_MASK;

	/* Beyond the object; or private: an object is shared memory, never copied on write. */
	if (first + vma_pages(vma) > obj->size >> PAGE_SHIFT ||
	    !(vma->vm_flags & VM_MAYSHARE)) {
		gmem_obj_put(obj);
		return -EINVAL;
	}
	gmem_obj_map_vma(obj, vma);
	return 0;
}

int gmem_obj_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct gmem_file *f = file->private_data;
	struct gmem_obj *obj;

	obj = gmem_obj_lookup_id(f, vma->vm_pgoff >> GMEM_OBJ_PGOFF_SHIFT);
	if (!obj)
		return -EINVAL;		/* no object of this file's at this offset */
	return gmem_obj_mmap_obj(obj, vma);
}

/*
 * Place an object's mapping so that its device pages (@align bytes) are aligned in VA as they
 * are in the object: the device then maps each with one 64 KiB or 2 MiB leaf.
 */
unsigned long gmem_obj_place(struct file *file, unsigned long addr, unsigned long len,
			     unsigned long pgoff, unsigned long flags, unsigned long align)
{
	u64 off = (u64)(pgoff & GMEM_OBJ_PGOFF_MASK) << PAGE_SHIFT;
	unsigned long va;

	if (addr || (flags & MAP_FIXED) || align <= PAGE_SIZE || len + align < len)
		return gmem_mm_get_unmapped_area(file, addr, len, pgoff, flags);
	va = gmem_mm_get_unmapped_area(file, 0, len + align, pgoff, flags);
	if (IS_ERR_VALUE(va))
		return gmem_mm_get_unmapped_area(file, addr, len, pgoff, flags);
	return va + ((off - va) & (align - 1));
}

unsigned long gmem_obj_get_unmapped_area(struct file *file, unsigned long addr,
					 unsigned long len, unsigned long pgoff,
					 unsigned long flags)
{
	struct gmem_file *f = file->private_data;
	unsigned long align = PAGE_SIZE;
	struct gmem_obj *obj;

	obj = gmem_obj_lookup_id(f, pgoff >> GMEM_OBJ_PGOFF_SHIFT);
	if (obj) {
		align = obj->page_size;
		gmem_obj_put(obj);
	}
	return gmem_obj_place(file, addr, len, pgoff, flags, align);
}

/* ---- device faults ---- */

/*
 * A device fault at @va (@write: it writes) of context @ctx: if @va lies in a mapping of an
 * object of this device, map the object's pages of its 2 MiB window there ([*start, *end))
 * and return 0 or the errno to fail the command with (-EPERM: a write to a read-only
 * mapping). -ENOENT if @va is not in an object mapping: the caller goes the HMM way.
 */
int gmem_obj_fault(struct gmem_ctx *ctx, u64 va, bool write, u64 *start, u64 *end)
{
	/* Inserted for an object's mapping only: the DRM front end's SVM has its own. */
	struct mmu_interval_notifier *mni = gmem_notifier(ctx, va);
	bool prepared = false;

	for (unsigned int tries = 0; tries < 16; tries++) {
		struct vm_area_struct *vma;
		unsigned long seq;
		struct gmem_obj *obj;
		struct gmem_obj_peer *peer = NULL;
		u64 base, ws, we;
		int ret = 0, replaced = 0;
		const u64 *addr;
		bool wr, hbm, managed;

		seq = mni ? mmu_interval_read_begin(mni) : 0;
		mmap_read_lock(ctx->mm);
		vma = vma_lookup(ctx->mm, va);
		if (!vma || !gmem_obj_vma(vma)) {
			mmap_read_unlock(ctx->mm);
			return -ENOENT;
		}
		if (!mni) {
			/* (inserted with the mmap lock not held) */
			mmap_read_unlock(ctx->mm);
			mni = gmem_notifier_get(ctx, va);
			if (IS_ERR(mni))
				return PTR_ERR(mni);
			continue;
		}
		if (!prepared && vma->vm_ops == &gmem_managed_vm_ops) {
			mmap_read_unlock(ctx->mm);
			/* A managed page moves first: its zaps would fail the read_retry below. */
			gmem_managed_device_prepare(ctx, va, write);
			prepared = true;
			continue;
		}
		obj = vma->vm_private_data;
		wr = vma->vm_flags & VM_WRITE;
		/* Another device's object: reached over PCIe, if it was imported here. */
		if (obj->g != ctx->g)
			peer = gmem_obj_peer_of(obj, ctx->g);
		if (!(vma->vm_flags & VM_READ) || (obj->g != ctx->g && !peer))
			ret = -EFAULT;	/* PROT_NONE; another device's, never imported here */
		else if (write && !wr)
			ret = -EPERM;
		kref_get(&obj->ref);
		/* A managed object's pages move one by one: only the faulting one is mapped. */
		managed = gmem_obj_is_managed(obj);
		if (managed) {
			ws = va - gmem_obj_offset(vma, va) % obj->page_size;
			we = ws + obj->page_size;
		} else {
			ws = ALIGN_DOWN(va, GMEM_HUGE_SIZE);
			we = ALIGN(va + 1, GMEM_HUGE_SIZE);
		}
		ws = max_t(u64, ws, vma->vm_start);
		we = min_t(u64, we, vma->vm_end);
		base = gmem_obj_offset(vma, ws);	/* object offset at ws */
		mmap_read_unlock(ctx->mm);

		ret = ret ?: gmem_pt_reserve(ctx, ws, we);
		if (ret) {
			gmem_obj_put(obj);
			return ret;
		}
		/* Where it is now: an eviction holds this while it moves it (then zaps). */
		mutex_lock(&obj->lock);
		if (peer && gmem_obj_in_hbm(obj) &&
		    (READ_ONCE(obj->g->unbinding) || !READ_ONCE(obj->g->pdev))) {
			mutex_unlock(&obj->lock);
			gmem_obj_put(obj);
			return -EFAULT;	/* its HBM went with its device (gmem_obj_dev_unbind()) */
		}
		addr = peer ? peer->addr : obj->addr;
		hbm = !peer && gmem_obj_in_hbm(obj);
		mutex_lock(&ctx->lock);
		if (mmu_interval_read_retry(mni, seq)) {
			mutex_unlock(&ctx->lock);
			mutex_unlock(&obj->lock);
			gmem_obj_put(obj);
			continue;	/* the mapping changed meanwhile: look again */
		}
		for (u64 a = ws; a < we && ret >= 0;) {
			u64 off = base + (a - ws), ps = obj->page_size;
			u64 unit = addr[off / ps], perm;
			bool w = wr, h = hbm, dup = false;

			if (managed)	/* where the page is now: system memory or its HBM copy */
				unit = gmem_managed_target(obj, off, &h, &w, &dup);
			/* A whole device page, aligned in VA and in memory: one leaf (or group). */
			if (off % ps || !IS_ALIGNED(a, ps) || a + ps > we || !IS_ALIGNED(unit, ps))
				ps = PAGE_SIZE;
			perm = w && wr ? GMEM_PTE_RW : 0;
			if (perm && ctx->hook_atomic && !ctx->hook_atomic(ctx, a, &ps, h))
				perm &= ~GMEM_PTE_ATOMIC;
			ret = gmem_pt_map_obj(ctx, a, unit + off % obj->page_size, ps, h, perm, dup);
			replaced |= ret > 0;
			a += ps;
		}
		mutex_unlock(&ctx->lock);
		mutex_unlock(&obj->lock);
		gmem_obj_put(obj);
		if (replaced || ret == -EAGAIN)
			gmem_tlb_invalidate(ctx->g, ctx->id, ws, we - ws);
		if (ret == -EAGAIN)
			continue;	/* the spare tables ran out: reserve again */
		*start = ws;
		*end = we;
		return ret < 0 ? ret : 0;
	}
	return -EBUSY;
}
