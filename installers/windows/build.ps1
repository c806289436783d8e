# Windows: build the one-folder bundle (dist\kms-manager\), smoke-test the frozen executables, and
# make the installer dist\kms-manager-<version>-setup.exe with Inno Setup 6 (iscc on PATH, or in
# its default folder). Needs this project with its dev extra and Pillow (for the .ico):
#   python -m pip install -e ".[dev]" pillow
#   powershell -ExecutionPolicy Bypass -File installers\windows\build.ps1
$ErrorActionPreference = "Stop"
$root = (Resolve-Path "$PSScriptRoot\..\..").Path
Set-Location $root
$bundle = Join-Path $root "dist\kms-manager"

function Check($what) { if ($LASTEXITCODE -ne 0) { throw "build.ps1: FAILED: $what (exit code $LASTEXITCODE)" } }

Write-Host "== PyInstaller: installers\kms-manager.spec -> $bundle"
python -m PyInstaller --noconfirm --log-level WARN --distpath dist --workpath build installers\kms-manager.spec
Check "PyInstaller"
# The licence and every shipped component's (the LGPL's Qt with how to replace it): the installer
# shows LICENSE before and the notices after installing (kms-manager.iss).
Copy-Item LICENSE "$bundle\LICENSE"
python installers\licences.py gui | Out-File -Encoding utf8 "$bundle\THIRD_PARTY_NOTICES.txt"; Check "licences.py"

Write-Host "== smoke: kma.exe --help, kma.exe demo --json"
$smoke = Join-Path ([System.IO.Path]::GetTempPath()) ("kms-smoke-" + [guid]::NewGuid())
New-Item -ItemType Directory -Path $smoke | Out-Null
& "$bundle\kma.exe" --help | Out-Null; Check "kma.exe --help"
& "$bundle\kma.exe" demo --data-dir "$smoke\demo" --json | Out-File "$smoke\demo.json"; Check "kma.exe demo"

# kms-manager.exe is a windowed executable (no console): Start-Process -Wait is what waits for it.
Write-Host "== smoke: kms-manager.exe --local --screenshots (offscreen; local mode runs the bundled kma.exe)"
$env:QT_QPA_PLATFORM = "offscreen"
$gui = Start-Process -FilePath "$bundle\kms-manager.exe" -Wait -PassThru `
  -ArgumentList @("--local", "--data-dir", "`"$smoke\gui\kma`"", "--screenshots", "`"$smoke\shots`"")
Remove-Item Env:QT_QPA_PLATFORM
if ($gui.ExitCode -ne 0) { throw "build.ps1: FAILED: kms-manager.exe --local exited $($gui.ExitCode)" }
$shots = @(Get-ChildItem "$smoke\shots\*.png")
if ($shots.Count -lt 3) { throw "build.ps1: FAILED: only $($shots.Count) screenshots rendered" }
Write-Host "ok: $($shots.Count) screenshots"
if (Get-Process -Name kma -ErrorAction SilentlyContinue) { throw "build.ps1: FAILED: the local KMA outlived kms-manager" }

Write-Host "== installer: Inno Setup"
$version = python -c "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb'))['project']['version'])"
$iscc = (Get-Command iscc -ErrorAction SilentlyContinue).Source
if (-not $iscc) { $iscc = "${env:ProgramFiles(x86)}\Inno Setup 6\ISCC.exe" }
& $iscc /Q "/DAppVersion=$version" installers\windows\kms-manager.iss; Check "iscc"
Get-Item "dist\kms-manager-$version-setup.exe" | ForEach-Object { Write-Host "$($_.Length) bytes $($_.FullName)" }
