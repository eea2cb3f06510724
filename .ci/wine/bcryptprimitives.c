/*
 * bcryptprimitives.dll for Wine 8 (Debian bookworm), which lacks it.
 *
 * Go 1.24+ on Windows takes its randomness from ProcessPrng in
 * bcryptprimitives.dll and refuses to start without it ("fatal error:
 * bcryptprimitives.dll not found"). Wine added that DLL in 9.x; this one
 * forwards ProcessPrng to Wine's BCryptGenRandom with the system RNG, which
 * is what the real ProcessPrng draws from. Only .ci/wine/run uses it, to
 * run the Windows test binaries under Wine.
 */
#include <windows.h>
#include <bcrypt.h>

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
	(void)reason;
	(void)reserved;
	return TRUE;
}
