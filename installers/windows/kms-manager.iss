; Inno Setup 6 script: a per-machine installer for the KMS manager's one-folder bundle
; (dist\kms-manager\, built by installers\windows\build.ps1), with a Start menu entry and an
; uninstaller (Settings > Apps, or the Start menu's "Uninstall KMS Manager").
;
;   iscc /DAppVersion=0.1.0 installers\windows\kms-manager.iss   ->  dist\kms-manager-0.1.0-setup.exe
;
; Paths are relative to this script's folder (Inno Setup's SourcePath).

#ifndef AppVersion
  #define AppVersion "0.1.0"
#endif

[Setup]
AppId={{5C2A7E0B-6F3D-4B8E-9A51-2D7C4E8B1F60}
AppName=KMS Manager
AppVersion={#AppVersion}
LicenseFile=..\..\LICENSE
InfoAfterFile=..\..\dist\kms-manager\THIRD_PARTY_NOTICES.txt
AppPublisher=KMS project
DefaultDirName={autopf}\KMS Manager
DefaultGroupName=KMS Manager
DisableProgramGroupPage=yes
PrivilegesRequired=admin
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
OutputDir=..\..\dist
OutputBaseFilename=kms-manager-{#AppVersion}-setup
UninstallDisplayIcon={app}\kms-manager.exe
Compression=lzma2
SolidCompression=yes
WizardStyle=modern

[Files]
Source: "..\..\dist\kms-manager\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[Icons]
Name: "{group}\KMS Manager"; Filename: "{app}\kms-manager.exe"
Name: "{group}\KMS Manager (local demo KMA)"; Filename: "{app}\kms-manager.exe"; Parameters: "--local"
Name: "{group}\Uninstall KMS Manager"; Filename: "{uninstallexe}"

[Run]
Filename: "{app}\kms-manager.exe"; Description: "Start KMS Manager"; Flags: nowait postinstall skipifsilent
