/*
 * bcryptprimitives.dll for Wine 8 (Debian bookworm), which lacks it.
 *
 * Go 1.24+ on Windows takes its randomness from ProcessPrng in
 * bcryptprimitives.dll and refuses to start without it ("fatal error:
 * bcryptprimitives.dll not found"). Wine added that DLL in 9.x; this one
 * forwards ProcessPrng to Wine's BCryptGenRandom with the system RNG, which
 * is what the real ProcessPrng draws from. Only .ci/wine/run uses it, to
 * run the Windows test binaries under Wine.
 *
 * It also works around a second Wine 8 gap: NtSetInformationFile does not
 * know FileDispositionInformationEx (class 64, Windows 10 1607+) and
 * answers STATUS_NOT_IMPLEMENTED, which Go 1.26's os.RemoveAll reports as
 * "Invalid function" instead of falling back to the older delete call as
 * it does for STATUS_INVALID_INFO_CLASS. Go loads this DLL at start-up,
 * before any package resolves its ntdll functions; DllMain then points the
 * program's kernel32!GetProcAddress import at a wrapper that hands out an
 * NtSetInformationFile answering STATUS_INVALID_INFO_CLASS for class 64,
 * i.e. what an older Windows answers, so Go takes its own fallback.
 */
#include <windows.h>
#include <bcrypt.h>
#include <string.h>

typedef LONG(NTAPI *nsif_fn)(HANDLE, PVOID, PVOID, ULONG, ULONG);
typedef FARPROC(WINAPI *gpa_fn)(HMODULE, LPCSTR);
static gpa_fn real_gpa;
static nsif_fn real_nsif;

static LONG NTAPI nsif(HANDLE h, PVOID io, PVOID info, ULONG len, ULONG cls)
{
	if (cls == 64) /* FileDispositionInformationEx */
		return (LONG)0xC0000003L; /* STATUS_INVALID_INFO_CLASS */
	return real_nsif(h, io, info, len, cls);
}

static FARPROC WINAPI gpa(HMODULE m, LPCSTR name)
{
	FARPROC p = real_gpa(m, name);
	if (p != NULL && ((ULONG_PTR)name >> 16) != 0 && strcmp(name, "NtSetInformationFile") == 0) {
		real_nsif = (nsif_fn)(void *)p;
		return (FARPROC)(void *)nsif;
	}
	return p;
}

/* hook replaces the main program's import of kernel32!GetProcAddress. */
static void hook(void)
{
	BYTE *base = (BYTE *)GetModuleHandleA(NULL);
	IMAGE_DOS_HEADER *dos = (IMAGE_DOS_HEADER *)base;
	IMAGE_NT_HEADERS *nt = (IMAGE_NT_HEADERS *)(base + dos->e_lfanew);
	IMAGE_DATA_DIRECTORY dir = nt->OptionalHeader.DataDirectory[IMAGE_DIRECTORY_ENTRY_IMPORT];
	FARPROC want = GetProcAddress(GetModuleHandleA("kernel32.dll"), "GetProcAddress");
	IMAGE_IMPORT_DESCRIPTOR *d;
	if (dir.VirtualAddress == 0 || want == NULL)
		return;
	real_gpa = (gpa_fn)(void *)want;
	for (d = (IMAGE_IMPORT_DESCRIPTOR *)(base + dir.VirtualAddress); d->Name != 0; d++) {
		IMAGE_THUNK_DATA *t = (IMAGE_THUNK_DATA *)(base + d->FirstThunk);
		for (; t->u1.Function != 0; t++) {
			if ((FARPROC)(ULONG_PTR)t->u1.Function == want) {
				DWORD old;
				if (VirtualProtect(&t->u1.Function, sizeof t->u1.Function, PAGE_READWRITE, &old)) {
					t->u1.Function = (ULONG_PTR)(void *)gpa;
					VirtualProtect(&t->u1.Function, sizeof t->u1.Function, old, &old);
				}
			}
		}
	}
}

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!BCRYPT_SUCCESS(BCryptGenRandom(NULL, data, n, BCRYPT_USE_SYSTEM_PREFERRED_RNG)))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}

BOOL WINAPI DllMain(HINSTANCE inst, DWORD reason, LPVOID reserved)
{
	(void)inst;
	(void)reserved;
	if (reason == DLL_PROCESS_ATTACH)
		hook();
	return TRUE;
}
